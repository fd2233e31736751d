"""The ToolJournal contract, run against every adapter."""

from __future__ import annotations

import pytest

from domain.errors import RunLost
from domain.model import RunError, RunStatus, new_id
from ports.journal import JournalEntry
from ports.runs import RunFinish
from tests.contracts.run_stores import (
    InMemoryStores,
    PostgresStores,
    RunStore,
    SqliteStores,
    StoreClock,
    StoreContract,
    a_conversation,
    a_running_run,
)


class ToolJournalContract(StoreContract):
    async def test_a_started_call_is_recorded_and_its_attempts_counted(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        key = f"{run.conversation_id}:call-1"
        await store.call_started(key, run.conversation_id, run.id, "bank__pay", True, clock.now())
        assert await store.entries([key, "never"]) == {key: JournalEntry(key, "bank__pay", True, 1)}
        await store.call_started(key, run.conversation_id, run.id, "bank__pay", True, clock.now())
        assert (await store.entries([key]))[key].attempts == 2

    async def test_a_run_that_is_no_longer_running_may_not_start_a_call(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        await store.finish_run(run.id, RunFinish(RunStatus.INTERRUPTED, clock.now(), RunError("RUN_LOST", "taken over")))
        key = f"{run.conversation_id}:call-1"
        with pytest.raises(RunLost):
            await store.call_started(key, run.conversation_id, run.id, "bank__pay", True, clock.now())
        with pytest.raises(RunLost):
            await store.call_started(key, run.conversation_id, new_id(), "bank__pay", True, clock.now())
        assert await store.entries([key]) == {}

    async def test_a_lost_run_does_not_count_an_attempt(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        key = f"{run.conversation_id}:call-1"
        await store.call_started(key, run.conversation_id, run.id, "t", False, clock.now())
        await store.finish_run(run.id, RunFinish(RunStatus.INTERRUPTED, clock.now(), RunError("RUN_LOST", "x")))
        with pytest.raises(RunLost):
            await store.call_started(key, run.conversation_id, run.id, "t", False, clock.now())
        assert (await store.entries([key]))[key].attempts == 1

    async def test_a_call_outside_a_run_is_not_fenced(self, store: RunStore, clock: StoreClock) -> None:
        cid = await a_conversation(store, clock)
        await store.call_started(f"{cid}:c", cid, None, "t", False, clock.now())
        assert (await store.entries([f"{cid}:c"]))[f"{cid}:c"].unsafe is False

    async def test_no_keys_means_no_entries(self, store: RunStore) -> None:
        assert await store.entries([]) == {}
        assert await store.entries(iter(["x"])) == {}


class TestInMemoryToolJournal(InMemoryStores, ToolJournalContract):
    pass


class TestSqliteToolJournal(SqliteStores, ToolJournalContract):
    pass


class TestPostgresToolJournal(PostgresStores, ToolJournalContract):
    pass
