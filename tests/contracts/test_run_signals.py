"""The RunSignals contract, run against every adapter."""

from __future__ import annotations

from domain.model import RunStatus, new_id
from ports.runs import RunFinish
from tests.contracts.run_stores import (
    InMemoryStores,
    PostgresStores,
    RunStore,
    SqliteStores,
    StoreClock,
    StoreContract,
    a_running_run,
)


class RunSignalsContract(StoreContract):
    async def test_a_cancel_request_is_seen_for_that_run_only(self, store: RunStore, clock: StoreClock) -> None:
        target, other = await a_running_run(store, clock), await a_running_run(store, clock)
        assert await store.cancel_requested([target.id, other.id]) == set()
        assert await store.request_cancel(target.id)
        assert await store.cancel_requested([target.id, other.id, new_id()]) == {target.id}

    async def test_requesting_twice_is_harmless(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        assert await store.request_cancel(run.id)
        assert await store.request_cancel(run.id)
        assert await store.cancel_requested([run.id]) == {run.id}

    async def test_a_finished_or_unknown_run_cannot_be_cancelled(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, clock.now()))
        assert not await store.request_cancel(run.id)
        assert not await store.request_cancel(new_id())
        assert await store.cancel_requested([run.id]) == set()

    async def test_a_request_is_no_longer_pending_once_the_run_ends(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        await store.request_cancel(run.id)
        await store.finish_run(run.id, RunFinish(RunStatus.CANCELLED, clock.now()))
        assert await store.cancel_requested([run.id]) == set()

    async def test_no_runs_asked_means_none_found(self, store: RunStore) -> None:
        assert await store.cancel_requested([]) == set()


class TestInMemoryRunSignals(InMemoryStores, RunSignalsContract):
    pass


class TestSqliteRunSignals(SqliteStores, RunSignalsContract):
    pass


class TestPostgresRunSignals(PostgresStores, RunSignalsContract):
    pass
