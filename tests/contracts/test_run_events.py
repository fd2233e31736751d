"""The RunEventLog contract, run against every adapter."""

from __future__ import annotations

import asyncio
import time

from domain.events import StreamEvent
from domain.model import RunError, RunStatus, new_id
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


def tokens(*seqs: int) -> list[tuple[int, StreamEvent]]:
    return [(seq, StreamEvent("token", f"t{seq}")) for seq in seqs]


class RunEventLogContract(StoreContract):
    async def test_events_read_back_in_id_order_after_the_given_id(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        trace = StreamEvent("trace", {"step": 1, "name": "agent", "node": "agent", "event": "enter"})
        await store.append({run.id: [(2, StreamEvent("token", "b")), (1, trace)]})
        await store.append({run.id: tokens(3)})
        assert await store.read(run.id, 0) == (
            (1, trace),
            (2, StreamEvent("token", "b")),
            (3, StreamEvent("token", "t3")),
        )
        assert [seq for seq, _ in await store.read(run.id, 2)] == [3]
        assert await store.read(run.id, 3) == ()
        assert await store.read(new_id(), 0) == ()

    async def test_event_data_comes_back_as_json(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        data = {"name": "t", "arguments": {"n": [1, 2]}, "ok": True, "none": None, "text": "é ✓"}
        await store.append({run.id: [(1, StreamEvent("trace", data))]})
        assert await store.read(run.id, 0) == ((1, StreamEvent("trace", data)),)

    async def test_an_id_already_stored_is_ignored(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        await store.append({run.id: tokens(1, 2)})
        await store.append({run.id: [(2, StreamEvent("token", "again")), (3, StreamEvent("token", "t3"))]})
        assert [e.data for _, e in await store.read(run.id, 0)] == ["t1", "t2", "t3"]

    async def test_one_append_writes_several_runs(self, store: RunStore, clock: StoreClock) -> None:
        a, b = await a_running_run(store, clock), await a_running_run(store, clock)
        await store.append({a.id: tokens(1, 2), b.id: tokens(1)})
        assert len(await store.read(a.id, 0)) == 2 and len(await store.read(b.id, 0)) == 1

    async def test_events_of_a_run_that_is_not_running_are_dropped(self, store: RunStore, clock: StoreClock) -> None:
        live, lost = await a_running_run(store, clock), await a_running_run(store, clock)
        await store.finish_run(lost.id, RunFinish(RunStatus.INTERRUPTED, clock.now(), RunError("RUN_LOST", "x")))
        unknown = new_id()
        await store.append({live.id: tokens(1), lost.id: tokens(1, 2), unknown: tokens(1)})
        assert len(await store.read(live.id, 0)) == 1
        assert await store.read(lost.id, 0) == () and await store.read(unknown, 0) == ()

    async def test_the_last_events_are_written_with_the_outcome_before_the_terminal_one(
        self, store: RunStore, clock: StoreClock
    ) -> None:
        run, other = await a_running_run(store, clock), await a_running_run(store, clock)
        await store.append({run.id: tokens(1, 2)})
        end = StreamEvent("end", {"status": "completed"})
        finish = RunFinish(RunStatus.COMPLETED, clock.now(), event=end, event_id=5, events=tokens(2, 3, 4))
        assert await store.finish_run(run.id, finish)
        assert await store.read(run.id, 0) == (*tokens(1, 2, 3, 4), (5, end))
        await store.finish_run(other.id, RunFinish(RunStatus.COMPLETED, clock.now(), event=end))
        refused = RunFinish(RunStatus.FAILED, clock.now(), event=end, events=tokens(7))
        assert not await store.finish_run(other.id, refused)  # not running: nothing is written
        assert await store.read(other.id, 0) == ((1, end),)

    async def test_the_tokens_of_one_append_are_one_record_read_back_one_event_per_id(
        self, store: RunStore, clock: StoreClock
    ) -> None:
        run = await a_running_run(store, clock)
        trace = StreamEvent("trace", {"step": 1, "name": "agent", "node": "agent", "event": "leave"})
        await store.append({run.id: [*tokens(*range(1, 1001)), (1001, trace), *tokens(1002, 1003)]})
        end = StreamEvent("end", {"status": "completed"})
        await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, clock.now(), event=end, event_id=1004))
        everything = (*tokens(*range(1, 1001)), (1001, trace), *tokens(1002, 1003), (1004, end))
        for after in (0, 1, 2, 500, 999, 1000, 1001, 1002, 1003, 1004):
            assert await store.read(run.id, after) == everything[after:]
        await clock.advance(0.3)
        assert await store.prune(0.1) == 4  # 1,000 tokens, the trace, 2 tokens, the end

    async def test_an_append_retried_with_later_tokens_repeats_no_event(self, store: RunStore, clock: StoreClock) -> None:
        # a flush whose commit was unknown is retried with what was published since
        run = await a_running_run(store, clock)
        await store.append({run.id: tokens(1, 2, 3, 4, 5)})
        await store.append({run.id: tokens(3, 4, 5, 6, 7, 8, 9)})
        await store.append({run.id: tokens(8, 9, 10)})
        assert await store.read(run.id, 0) == tuple(tokens(*range(1, 11)))
        assert await store.read(run.id, 4) == tuple(tokens(*range(5, 11)))
        assert await store.read(run.id, 9) == tuple(tokens(10))

    async def test_an_empty_append_is_a_no_op(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        await store.append({})
        await store.append({run.id: []})
        assert await store.read(run.id, 0) == ()

    async def test_wait_returns_at_once_when_events_are_there(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        await store.append({run.id: tokens(1, 2)})
        started = time.monotonic()
        assert [seq for seq, _ in await store.wait(run.id, 0, timeout=5)] == [1, 2]
        assert time.monotonic() - started < 0.5

    async def test_wait_wakes_up_on_a_new_event(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        await store.append({run.id: tokens(1)})
        waiter = asyncio.create_task(store.wait(run.id, 1, timeout=5))
        await asyncio.sleep(0.05)
        assert not waiter.done()
        started = time.monotonic()
        await store.append({run.id: tokens(2, 3)})
        events = await asyncio.wait_for(waiter, 2)
        assert [seq for seq, _ in events] == [2, 3] and time.monotonic() - started < 0.5

    async def test_wait_wakes_up_on_the_terminal_event(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        waiter = asyncio.create_task(store.wait(run.id, 0, timeout=5))
        await asyncio.sleep(0.02)
        end = StreamEvent("end", {"status": "cancelled"})
        await store.finish_run(run.id, RunFinish(RunStatus.CANCELLED, clock.now(), event=end))
        assert await asyncio.wait_for(waiter, 2) == ((1, end),)

    async def test_wait_gives_up_after_the_timeout(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        started = time.monotonic()
        while time.monotonic() - started < 0.2:  # it may return early with (): callers loop
            assert await store.wait(run.id, 0, timeout=0.2) == ()
        assert time.monotonic() - started < 1.0
        assert await store.wait(run.id, 0, timeout=0) == ()

    async def test_prune_deletes_the_events_of_runs_finished_longer_ago_than_the_retention(
        self, store: RunStore, clock: StoreClock
    ) -> None:
        finished, running = await a_running_run(store, clock), await a_running_run(store, clock)
        await store.append({finished.id: tokens(1, 2), running.id: tokens(1)})
        end = StreamEvent("end", {"status": "completed"})
        await store.finish_run(finished.id, RunFinish(RunStatus.COMPLETED, clock.now(), event=end))
        await clock.advance(0.3)
        assert await store.prune(3600) == 0
        assert len(await store.read(finished.id, 0)) == 3
        assert await store.prune(0.1) == 2  # records: the tokens of one append are one
        assert await store.read(finished.id, 0) == ()
        assert len(await store.read(running.id, 0)) == 1  # a running run's events stay
        assert await store.prune(0.1) == 0


class TestInMemoryRunEventLog(InMemoryStores, RunEventLogContract):
    pass


class TestSqliteRunEventLog(SqliteStores, RunEventLogContract):
    pass


class TestPostgresRunEventLog(PostgresStores, RunEventLogContract):
    pass
