"""The ScheduleStore contract, with the claim's halves on start_run, enqueue and finish_run
(ports.schedules), run against every adapter."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Protocol

import pytest

from domain.crons import GraphInput, OnCompleted
from domain.errors import FiringTaken, SessionInProgress
from domain.model import Run, RunStatus, RunTrigger, new_id
from domain.principals import BOOTSTRAP_ID
from domain.queue import QueuedMessage
from domain.schedules import CatchUp, FiringClaim, Schedule, ScheduleEdit, Timing
from ports.runs import RunFinish
from ports.schedules import ScheduleStore
from tests.contracts.run_stores import (
    OWNER,
    InMemoryStores,
    PostgresStores,
    RunStore,
    SqliteStores,
    StoreClock,
    StoreContract,
    a_conversation,
    a_running_run,
)

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


class Store(RunStore, ScheduleStore, Protocol):
    """A run store that keeps schedules too (every adapter)."""


def every_second(owner: str = "u", cid: str | None = None, **fields: object) -> Schedule:
    made = Schedule(new_id(), owner, Timing("* * * * * *"), "tick", T0, cid, **fields)  # type: ignore[arg-type]
    return made.armed(T0 - timedelta(seconds=1))  # next_at T0


def claim_of(s: Schedule, at: datetime = T0) -> FiringClaim:
    return FiringClaim(s.id, at, at + timedelta(seconds=1))


def run_in(cid: str, clock: StoreClock) -> Run:
    return Run(new_id(), cid, RunStatus.RUNNING, clock.now(), owner=OWNER, trigger=RunTrigger.SCHEDULE)


class ScheduleStoreContract(StoreContract):
    async def test_a_schedule_is_stored_read_listed_per_owner_and_deleted(self, store: Store, clock: StoreClock) -> None:
        mine, theirs = every_second("me"), every_second("them")
        await store.put_schedule(mine)
        await store.put_schedule(theirs)
        assert await store.schedule(mine.id) == mine
        assert await store.schedule(mine.id, owner="them") is None
        assert [s.id for s in await store.schedules("me")] == [mine.id]
        assert not await store.delete_schedule(mine.id, owner="them")
        assert await store.delete_schedule(mine.id, owner="me")
        assert await store.schedule(mine.id) is None

    async def test_a_replace_keeps_owner_and_creation_and_refuses_another_owner(self, store: Store, clock: StoreClock) -> None:
        s = every_second("me")
        await store.put_schedule(s)
        paused = ScheduleEdit(enabled=False, message="new").apply(s, T0)
        assert not await store.replace_schedule(paused, owner="them")
        assert await store.replace_schedule(paused, owner="me")
        stored = await store.schedule(s.id)
        assert stored is not None and not stored.enabled and stored.message == "new" and stored.next_at is None
        assert stored.owner == "me" and stored.created_at == s.created_at

    async def test_a_hosted_graphs_input_and_webhook_are_stored_and_replaced(self, store: Store, clock: StoreClock) -> None:
        graph = GraphInput(
            "agent",
            "a-1",
            {"messages": [], "value": "init"},
            {"configurable": {"k": 1}},
            {"ctx": True},
            {"label": "crons"},
            ("values", "updates"),
            "*",
            ("tools",),
            True,
            "async",
            OnCompleted.KEEP,
        )
        s = replace(every_second("me"), message="", graph=graph, webhook="https://example.com/hook")
        await store.put_schedule(s)
        assert await store.schedule(s.id) == s
        edited = ScheduleEdit(graph=replace(graph, metadata={"label": "other"}), webhook="https://example.com/2").apply(s, T0)
        assert await store.replace_schedule(edited, owner="me")
        stored = await store.schedule(s.id)
        assert stored is not None and stored.graph == edited.graph and stored.webhook == "https://example.com/2"
        assert [x.graph for x in await store.schedules("me")] == [edited.graph]

    async def test_due_lists_enabled_schedules_whose_time_came(self, store: Store, clock: StoreClock) -> None:
        s = every_second("due-" + new_id())
        later = Schedule(new_id(), s.owner, Timing("0 8 * * *", "Europe/Paris"), "x", T0).armed(T0)
        await store.put_schedule(s)
        await store.put_schedule(later)
        due = [d.id for d in await store.due(T0, 1000)]
        assert s.id in due and later.id not in due
        assert s.id not in [d.id for d in await store.due(T0 - timedelta(seconds=1), 1000)]

    async def test_a_firing_is_claimed_with_its_run_once(self, store: Store, clock: StoreClock) -> None:
        cid = await a_conversation(store, clock)
        s = every_second(cid=cid)
        await store.put_schedule(s)
        first = run_in(cid, clock)
        await store.start_run(first, clock.now(), firing=claim_of(s))
        await store.finish_run(first.id, RunFinish(RunStatus.COMPLETED, clock.now()))
        with pytest.raises(FiringTaken):  # the same firing again: nothing stored
            await store.start_run(run_in(cid, clock), clock.now(), firing=claim_of(s))
        assert [r.id for r in await store.recent_runs(cid, 10)] == [first.id]
        stored = await store.schedule(s.id)
        assert stored is not None and stored.next_at == T0 + timedelta(seconds=1) and stored.last_run_id == first.id
        [firing] = await store.firings(s.id, 10)
        assert (firing.scheduled_for, firing.run_id, firing.conversation_id, firing.redo) == (T0, first.id, cid, False)
        assert await store.scheduled_times([first.id, new_id()]) == {first.id: T0}
        assert await store.scheduled_times([]) == {}

    async def test_a_refused_run_leaves_the_firing_unclaimed(self, store: Store, clock: StoreClock) -> None:
        busy = await a_running_run(store, clock)
        s = every_second(cid=busy.conversation_id)
        await store.put_schedule(s)
        with pytest.raises(SessionInProgress):
            await store.start_run(run_in(busy.conversation_id, clock), clock.now(), firing=claim_of(s))
        stored = await store.schedule(s.id)
        assert stored is not None and stored.next_at == T0 and await store.firings(s.id, 10) == []

    async def test_a_paused_schedule_cannot_be_claimed(self, store: Store, clock: StoreClock) -> None:
        cid = await a_conversation(store, clock)
        s = every_second(cid=cid, enabled=False)
        await store.put_schedule(s)
        with pytest.raises(FiringTaken):
            await store.start_run(run_in(cid, clock), clock.now(), firing=claim_of(s))

    async def test_a_queued_firing_is_claimed_with_its_message(self, store: Store, clock: StoreClock) -> None:
        busy = await a_running_run(store, clock)
        s = every_second(cid=busy.conversation_id)
        await store.put_schedule(s)
        message = QueuedMessage(new_id(), busy.conversation_id, 0, "tick", clock.now())
        assert await store.enqueue(message, 20, claim_of(s)) is not None
        with pytest.raises(FiringTaken):
            await store.enqueue(QueuedMessage(new_id(), busy.conversation_id, 0, "tick", clock.now()), 20, claim_of(s))
        assert len(await store.queued(busy.conversation_id)) == 1
        [firing] = await store.firings(s.id, 10)
        assert firing.run_id == message.id and firing.queued

    async def test_a_run_that_lost_its_message_hands_its_firing_back_once(self, store: Store, clock: StoreClock) -> None:
        cid = await a_conversation(store, clock)
        s = every_second(cid=cid)
        await store.put_schedule(s)
        lost = run_in(cid, clock)
        await store.start_run(lost, clock.now(), firing=claim_of(s))
        await store.finish_run(lost.id, RunFinish(RunStatus.INTERRUPTED, clock.now(), input_recorded=False))
        assert [(f.schedule_id, f.redo) for f in await store.redo_firings(1000) if f.schedule_id == s.id] == [(s.id, True)]
        again = run_in(cid, clock)
        redo = FiringClaim(s.id, T0, None, redo=True)
        await store.start_run(again, clock.now(), firing=redo)
        with pytest.raises(FiringTaken):
            await store.start_run(run_in(await a_conversation(store, clock), clock), clock.now(), firing=redo)
        [firing] = await store.firings(s.id, 10)
        assert firing.run_id == again.id and not firing.redo
        assert s.id not in [f.schedule_id for f in await store.redo_firings(1000)]

    async def test_a_redo_queued_behind_a_run_is_left_to_its_queue(self, store: Store, clock: StoreClock) -> None:
        cid = await a_conversation(store, clock)
        s = every_second(cid=cid)
        await store.put_schedule(s)
        lost = run_in(cid, clock)
        await store.start_run(lost, clock.now(), firing=claim_of(s))
        await store.finish_run(lost.id, RunFinish(RunStatus.INTERRUPTED, clock.now(), input_recorded=False))
        busy = await a_running_run(store, clock, cid)
        message = QueuedMessage(new_id(), cid, 0, "tick", clock.now())
        assert await store.enqueue(message, 20, FiringClaim(s.id, T0, None, redo=True)) is not None
        [firing] = await store.firings(s.id, 10)
        assert firing.queued and firing.run_id == message.id and not firing.redo
        # its run stopping before the message is saved puts the message back in the queue,
        # and the firing is not handed back too (it would run twice)
        then = Run(new_id(), cid, RunStatus.RUNNING, clock.now(), owner=OWNER, trigger=RunTrigger.QUEUE)
        started = await store.finish_run(busy.id, RunFinish(RunStatus.COMPLETED, clock.now(), then=then))
        assert isinstance(started, QueuedMessage) and started.run_id == message.id
        await store.finish_run(message.id, RunFinish(RunStatus.INTERRUPTED, clock.now(), input_recorded=False))
        assert [q.id for q in await store.queued(cid)] == [message.id]
        assert s.id not in [f.schedule_id for f in await store.redo_firings(1000)]

    async def test_advance_is_a_compare_and_set(self, store: Store, clock: StoreClock) -> None:
        s = every_second(catch_up=CatchUp.SKIP)
        await store.put_schedule(s)
        later = T0 + timedelta(hours=1)
        assert await store.advance(s.id, T0, later)
        assert not await store.advance(s.id, T0, later + timedelta(hours=1))
        stored = await store.schedule(s.id)
        assert stored is not None and stored.next_at == later

    async def test_a_tick_answers_the_latest_tick_before_it(self, store: Store, clock: StoreClock) -> None:
        now = clock.now().replace(microsecond=0)
        await store.tick(now)
        await store.tick(now + timedelta(seconds=1))
        assert await store.tick(now) == now + timedelta(seconds=1)  # the latest, never moved back

    async def test_two_claims_of_one_firing_at_once_start_one_run(self, store: Store, clock: StoreClock) -> None:
        s = every_second()
        await store.put_schedule(s)
        cids = [await a_conversation(store, clock) for _ in range(6)]

        async def claim(cid: str) -> bool:
            try:
                await store.start_run(run_in(cid, clock), clock.now(), firing=claim_of(s))
            except FiringTaken:
                return False
            return True

        assert sum(await asyncio.gather(*(claim(c) for c in cids))) == 1
        assert len(await store.firings(s.id, 10)) == 1


class ScheduleGivingContract(StoreContract):
    async def test_giving_a_users_conversations_gives_their_schedules_too(self, store: Store, clock: StoreClock) -> None:
        cid = await a_conversation(store, clock)  # the bootstrap admin's
        theirs, others = every_second(BOOTSTRAP_ID, cid), every_second("someone")
        await store.put_schedule(theirs)
        await store.put_schedule(others)
        assert await store.give_conversations(BOOTSTRAP_ID, "ann") == 1
        assert [s.id for s in await store.schedules("ann")] == [theirs.id]
        assert [s.id for s in await store.schedules(BOOTSTRAP_ID)] == []
        assert [s.id for s in await store.schedules("someone")] == [others.id]


class TestInMemoryScheduleStore(InMemoryStores, ScheduleStoreContract, ScheduleGivingContract):
    pass


class TestSqliteScheduleStore(SqliteStores, ScheduleStoreContract, ScheduleGivingContract):
    pass


class TestPostgresScheduleStore(PostgresStores, ScheduleStoreContract, ScheduleGivingContract):
    pass
