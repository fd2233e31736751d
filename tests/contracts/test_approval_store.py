"""The ApprovalStore contract, run against every adapter."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from domain.approvals import ApprovalRequest, Decision, DecisionType
from domain.model import ToolCall
from tests.contracts.run_stores import (
    InMemoryStores,
    PostgresStores,
    RunStore,
    SqliteStores,
    StoreClock,
    StoreContract,
    a_conversation,
)

APPROVE = Decision(DecisionType.APPROVE)


def a_request(cid: str, call_id: str, clock: StoreClock, **args: object) -> ApprovalRequest:
    schema = {"type": "object", "properties": {"amount": {"type": "integer"}}}
    return ApprovalRequest(
        cid, ToolCall(call_id, "bank__charge", dict(args)), "run-1", "bank", "Charge a card.", schema, clock.now()
    )


class ApprovalStoreContract(StoreContract):
    async def test_a_request_is_stored_once_with_everything_a_card_shows(self, store: RunStore, clock: StoreClock) -> None:
        cid = await a_conversation(store, clock)
        first = a_request(cid, "c1", clock, amount=5, note="ünïcode")
        await store.add_request(first)
        await store.add_request(a_request(cid, "c1", clock, amount=999))  # a replayed step: kept as first stored
        got = await store.get_request(cid, "c1")
        assert got is not None and got.call == first.call and got.decision is None
        assert (got.server, got.description, got.run_id, dict(got.schema)) == (
            "bank",
            "Charge a card.",
            "run-1",
            dict(first.schema),
        )
        assert await store.get_request(cid, "other") is None
        assert [r.call.id for r in await store.requests(cid)] == ["c1"]

    async def test_decisions_are_all_or_nothing_and_only_once(self, store: RunStore, clock: StoreClock) -> None:
        cid = await a_conversation(store, clock)
        for call_id in ("a", "b"):
            await store.add_request(a_request(cid, call_id, clock))
        edit = Decision(DecisionType.EDIT, {"amount": 1})
        assert not await store.decide(cid, {"a": edit, "zzz": APPROVE}, clock.now())  # one unknown call: nothing
        assert all(r.decision is None for r in await store.requests(cid))
        assert await store.decide(cid, {"a": edit}, clock.now())
        assert not await store.decide(cid, {"a": APPROVE, "b": APPROVE}, clock.now())  # `a` is answered already
        decided = {r.call.id: r.decision for r in await store.requests(cid)}
        assert decided == {"a": edit, "b": None}

    async def test_concurrent_decisions_for_one_call_let_exactly_one_win(self, store: RunStore, clock: StoreClock) -> None:
        cid = await a_conversation(store, clock)
        await store.add_request(a_request(cid, "a", clock))
        wins = await asyncio.gather(*(store.decide(cid, {"a": APPROVE}, clock.now()) for _ in range(5)))
        assert sorted(wins) == [False] * 4 + [True]

    async def test_requests_go_with_their_conversation(self, store: RunStore, clock: StoreClock) -> None:
        cid = await a_conversation(store, clock)
        await store.add_request(a_request(cid, "a", clock))
        await store.delete_conversation(cid)
        assert list(await store.requests(cid)) == []

    async def test_undecided_requests_older_than_a_cutoff_are_listed(self, store: RunStore, clock: StoreClock) -> None:
        cid = await a_conversation(store, clock)
        await store.add_request(a_request(cid, "old", clock))
        await store.add_request(a_request(cid, "answered", clock))
        await store.decide(cid, {"answered": APPROVE}, clock.now())
        await clock.advance(0.05)
        cutoff = clock.now()
        await store.add_request(a_request(cid, "new", clock))
        assert [r.call.id for r in await store.undecided_before(cutoff)] == ["old"]
        assert list(await store.undecided_before(cutoff - timedelta(hours=1))) == []

    async def test_always_allowed_tools_are_remembered_listed_and_revoked(self, store: RunStore, clock: StoreClock) -> None:
        await store.allow_always("bank__charge", clock.now())
        await store.allow_always("bank__charge", clock.now())
        await store.allow_always("files__delete", clock.now())
        assert [r.tool for r in await store.always_allowed()] == ["bank__charge", "files__delete"]
        assert await store.revoke("bank__charge") and not await store.revoke("bank__charge")
        assert [r.tool for r in await store.always_allowed()] == ["files__delete"]


class TestInMemoryApprovalStore(InMemoryStores, ApprovalStoreContract):
    pass


class TestSqliteApprovalStore(SqliteStores, ApprovalStoreContract):
    pass


class TestPostgresApprovalStore(PostgresStores, ApprovalStoreContract):
    pass
