"""Ownership in the run store, run against every adapter: a conversation's owner, the
lists and finds that keep one user's, a user's load, and "always allow" rules per user."""

from __future__ import annotations

import uuid

from domain.model import new_id, utc_now
from domain.principals import BOOTSTRAP_ID
from domain.queue import QueuedMessage
from tests.contracts.run_stores import (
    InMemoryStores,
    PostgresStores,
    RunStore,
    SqliteStores,
    StoreClock,
    StoreContract,
    a_running_run,
)


async def owned(store: RunStore, owner: str, title: str = "t") -> str:
    cid = str(uuid.uuid4())
    await store.create_conversation(cid, title, utc_now(), owner=owner)
    return cid


class OwnershipContract(StoreContract):
    async def test_a_conversation_keeps_its_owner_and_lists_keep_one_users(self, store: RunStore, clock: StoreClock) -> None:
        ann, bob = f"u_{uuid.uuid4().hex[:16]}", f"u_{uuid.uuid4().hex[:16]}"
        mine, theirs = await owned(store, ann, "alpha"), await owned(store, bob, "alpha")
        found = await store.get_conversation(mine)
        assert found is not None and found.owner == ann
        assert [c.id for c in await store.list_conversations(owner=ann)] == [mine]
        assert [c.id for c in await store.list_conversations(owner=bob, query="alp", limit=5)] == [theirs]
        assert {mine, theirs} <= {c.id for c in await store.list_conversations()}
        assert [c.id for c in await store.find_conversations(mine[:8], 5, ann)] == [mine]
        assert await store.find_conversations(mine[:8], 5, bob) == []
        default = str(uuid.uuid4())
        await store.create_conversation(default, "old", utc_now())
        got = await store.get_conversation(default)
        assert got is not None and got.owner == BOOTSTRAP_ID  # what the migration gives existing rows

    async def test_a_users_load_is_their_running_runs_and_queued_messages(self, store: RunStore, clock: StoreClock) -> None:
        ann, bob = f"u_{uuid.uuid4().hex[:16]}", f"u_{uuid.uuid4().hex[:16]}"
        cid = await owned(store, ann)
        await owned(store, bob)
        assert await store.owner_load(ann) == 0
        await a_running_run(store, clock, cid)
        assert await store.owner_load(ann) == 1
        queued = await store.enqueue(QueuedMessage(new_id(), cid, 0, "next", clock.now()), 20)
        assert queued is not None
        assert (await store.owner_load(ann), await store.owner_load(bob)) == (2, 0)

    async def test_always_allow_rules_are_the_conversation_owners_alone(self, store: RunStore, clock: StoreClock) -> None:
        ann, bob = f"u_{uuid.uuid4().hex[:16]}", f"u_{uuid.uuid4().hex[:16]}"
        mine, theirs = await owned(store, ann), await owned(store, bob)
        await store.allow_always("bank__charge", clock.now(), mine)
        await store.allow_always("bank__charge", clock.now(), mine)  # idempotent
        assert [r.tool for r in await store.rules_for(mine)] == ["bank__charge"]
        assert list(await store.rules_for(theirs)) == []
        assert [r.tool for r in await store.always_allowed(ann)] == ["bank__charge"]
        assert list(await store.always_allowed(bob)) == [] and list(await store.always_allowed()) == []
        assert not await store.revoke("bank__charge", bob)  # bob cannot touch ann's rule
        assert [r.tool for r in await store.rules_for(mine)] == ["bank__charge"]
        await store.allow_always("bank__charge", clock.now(), theirs)
        assert await store.revoke("bank__charge", ann)
        assert list(await store.rules_for(mine)) == [] and [r.tool for r in await store.rules_for(theirs)] == ["bank__charge"]
        await store.allow_always("files__delete", clock.now(), str(uuid.uuid4()))  # an unknown conversation: nobody's
        assert list(await store.always_allowed()) == [] and list(await store.rules_for(str(uuid.uuid4()))) == []

    async def test_a_users_conversations_and_rules_are_given_to_another_whole(self, store: RunStore, clock: StoreClock) -> None:
        ann, bob = f"u_{uuid.uuid4().hex[:16]}", f"u_{uuid.uuid4().hex[:16]}"
        first, second = await owned(store, BOOTSTRAP_ID, "first"), await owned(store, BOOTSTRAP_ID, "second")
        theirs = await owned(store, bob, "bob's")
        await store.allow_always("bank__charge", clock.now(), first)
        await store.allow_always("files__read", clock.now(), first)
        await store.allow_always("files__read", clock.now(), (await owned(store, ann)))  # ann allows it already
        assert await store.give_conversations(BOOTSTRAP_ID, ann) == 2
        assert {first, second} <= {c.id for c in await store.list_conversations(owner=ann)}
        assert [c.id for c in await store.list_conversations(owner=bob)] == [theirs]
        assert await store.give_rules(BOOTSTRAP_ID, ann) == 2
        assert [r.tool for r in await store.always_allowed(ann)] == ["bank__charge", "files__read"]
        assert list(await store.always_allowed(BOOTSTRAP_ID)) == []
        assert [r.tool for r in await store.rules_for(second)] == ["bank__charge", "files__read"]
        assert (await store.give_conversations(BOOTSTRAP_ID, ann), await store.give_rules(BOOTSTRAP_ID, ann)) == (0, 0)


class TestInMemoryOwnership(InMemoryStores, OwnershipContract):
    pass


class TestSqliteOwnership(SqliteStores, OwnershipContract):
    pass


class TestPostgresOwnership(PostgresStores, OwnershipContract):
    pass
