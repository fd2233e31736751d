"""The AssistantStore contract (issue 44: langgraph-api's assistants, versioned, each user's
own beside the graphs' start-up ones), run against every adapter (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from adapters.memory.assistants import InMemoryAssistantStore
from adapters.postgres.assistants import PostgresAssistantStore
from adapters.postgres.database import PostgresDatabase
from adapters.sqlite.assistants import SqliteAssistantStore
from adapters.sqlite.runs import SqliteRunStore
from domain.assistants import Assistant, AssistantExists, AssistantPatch, NewAssistant, TooManyAssistants
from domain.model import new_id
from ports.assistants import AssistantStore

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def made(owner: str | None, graph: str = "agent", **fields: object) -> Assistant:
    return NewAssistant(graph, **fields).made(owner, T0)  # type: ignore[arg-type]


class AssistantStoreContract:
    @pytest.fixture
    def store(self) -> AssistantStore:
        raise NotImplementedError

    async def test_a_created_assistant_comes_back_as_made_and_its_id_cannot_be_taken_again(self, store: AssistantStore) -> None:
        ann = new_id()
        a = made(ann, name="writer", config={"configurable": {"model": "m"}}, metadata={"n": [1, {"x": None}]})
        await store.create(a, 10)
        assert await store.get(a.assistant_id, ann) == a
        assert await store.get(a.assistant_id, None) == a  # everyone's view
        with pytest.raises(AssistantExists):
            await store.create(a, 10)
        with pytest.raises(AssistantExists):  # whoever asks
            await store.create(made(new_id(), assistant_id=a.assistant_id), 10)

    async def test_another_user_s_assistant_is_unknown_and_a_start_up_one_is_everyone_s(self, store: AssistantStore) -> None:
        ann, bob = new_id(), new_id()
        mine, system = made(ann, "g1"), made(None, "g1")
        await store.create(mine, 10)
        await store.create(system, 10)
        assert await store.get(mine.assistant_id, bob) is None
        assert await store.get(system.assistant_id, bob) == system
        assert {a.assistant_id for a in await store.assistants(bob, ["g1"])} == {system.assistant_id}
        assert {a.assistant_id for a in await store.assistants(ann, ["g1"])} == {mine.assistant_id, system.assistant_id}
        assert list(await store.assistants(ann, ["other"])) == []
        assert list(await store.versions(mine.assistant_id, bob)) == []
        # writes name the owner the caller found: bob's attempt on ann's changes nothing
        assert await store.update(mine.assistant_id, bob, AssistantPatch(name="x"), at(1), 10) is None
        assert await store.set_latest(mine.assistant_id, bob, 1, at(1)) is None
        assert not await store.delete(mine.assistant_id, bob)
        assert await store.get(mine.assistant_id, ann) == mine

    async def test_an_update_is_a_new_latest_version_and_any_version_can_be_pinned(self, store: AssistantStore) -> None:
        ann = new_id()
        a = made(ann, name="v1", metadata={"label": "one", "keep": True}, context={"model": "a"})
        await store.create(a, 10)
        two = await store.update(a.assistant_id, ann, AssistantPatch(metadata={"label": "two"}), at(1), 10)
        assert two is not None and two.version == 2
        assert (dict(two.metadata), two.name, dict(two.context)) == ({"label": "two", "keep": True}, "v1", {"model": "a"})
        assert (two.created_at, two.updated_at) == (T0, at(1))
        three = await store.update(a.assistant_id, ann, AssistantPatch(name="v3", context={"model": "b"}), at(2), 10)
        assert three is not None and (three.version, three.name, dict(three.context)) == (3, "v3", {"model": "b"})
        assert dict(three.config) == {"configurable": {"model": "b"}}
        versions = await store.versions(a.assistant_id, ann)
        assert [(v.version, v.name, v.created_at) for v in versions] == [(3, "v3", at(2)), (2, "v1", at(1)), (1, "v1", T0)]
        pinned = await store.set_latest(a.assistant_id, ann, 1, at(3))
        assert pinned is not None and (pinned.version, pinned.name, dict(pinned.metadata)) == (1, "v1", dict(a.metadata))
        assert await store.get(a.assistant_id, ann) == pinned
        assert await store.set_latest(a.assistant_id, ann, 9, at(4)) is None  # no such version
        four = await store.update(a.assistant_id, ann, AssistantPatch(name="v4"), at(5), 10)
        assert four is not None and four.version == 4  # after the highest, not the pinned one

    async def test_a_deleted_assistant_is_gone_with_its_versions(self, store: AssistantStore) -> None:
        ann = new_id()
        a = made(ann)
        await store.create(a, 10)
        await store.update(a.assistant_id, ann, AssistantPatch(name="x"), at(1), 10)
        assert await store.delete(a.assistant_id, ann)
        assert await store.get(a.assistant_id, ann) is None
        assert list(await store.versions(a.assistant_id, ann)) == []
        assert not await store.delete(a.assistant_id, ann)
        await store.create(a, 10)  # its id is free again: version 1 afresh
        assert [v.version for v in await store.versions(a.assistant_id, ann)] == [1]

    async def test_a_user_s_assistants_and_an_assistant_s_versions_are_bounded(self, store: AssistantStore) -> None:
        ann = new_id()
        first = made(ann)
        await store.create(first, 2)
        await store.create(made(ann), 2)
        with pytest.raises(TooManyAssistants):
            await store.create(made(ann), 2)
        await store.create(made(new_id()), 2)  # another user's count is theirs
        await store.create(made(None), 0)  # a start-up one is never refused so
        assert await store.update(first.assistant_id, ann, AssistantPatch(name="2"), at(1), 2) is not None
        with pytest.raises(TooManyAssistants):
            await store.update(first.assistant_id, ann, AssistantPatch(name="3"), at(2), 2)
        assert [v.version for v in await store.versions(first.assistant_id, ann)] == [2, 1]

    async def test_updates_at_once_make_one_version_each(self, store: AssistantStore) -> None:
        ann = new_id()
        a = made(ann)
        await store.create(a, 10)
        done = await asyncio.gather(
            *(store.update(a.assistant_id, ann, AssistantPatch(metadata={"n": i}), at(i), 100) for i in range(8))
        )
        assert sorted(d.version for d in done if d is not None) == list(range(2, 10))
        assert [v.version for v in await store.versions(a.assistant_id, ann)] == list(range(9, 0, -1))


class TestInMemoryAssistantStore(AssistantStoreContract):
    @pytest.fixture
    def store(self) -> AssistantStore:
        return InMemoryAssistantStore()


class TestSqliteAssistantStore(AssistantStoreContract):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[AssistantStore]:
        runs = await SqliteRunStore.open(str(tmp_path / "db" / "sophos.db"))
        yield SqliteAssistantStore(*runs.workers())
        await runs.aclose()

    async def test_another_process_on_the_file_sees_a_created_assistant(self, tmp_path: Path) -> None:
        path = str(tmp_path / "db" / "sophos.db")
        one, two = await SqliteRunStore.open(path), await SqliteRunStore.open(path)
        try:
            a = made(new_id())
            await SqliteAssistantStore(*one.workers()).create(a, 10)
            assert await SqliteAssistantStore(*two.workers()).get(a.assistant_id, None) == a
        finally:
            await one.aclose()
            await two.aclose()


class TestPostgresAssistantStore(AssistantStoreContract):
    @pytest.fixture
    async def store(self, pg_url: str) -> AsyncIterator[AssistantStore]:
        db = PostgresDatabase(pg_url)
        yield PostgresAssistantStore(db)
        await db.close()
