"""The scheduler (services.scheduler) over the in-memory stores and a hand-driven clock: a
due firing starts a run through the run use case, once however many processes tick; one
that meets a run going is queued; the firings missed while no process ran run once or are
skipped; one whose run stopped before its message was saved starts again."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from domain.commands import SendMessage
from domain.errors import InvalidInput, StorageFailure
from domain.model import Run, RunOwner, RunStatus, RunTrigger, new_id
from domain.principals import BOOTSTRAP_ID, LOCAL, Principal, Role
from domain.schedules import CatchUp, FiringClaim, Schedule, ScheduleSpec, Timing
from services.scheduler import Scheduler
from services.schedules import ScheduleService
from tests.support.harness import Harness, make_harness

T0 = datetime(2026, 3, 1, 8, 0, 0, tzinfo=UTC)


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def scheduler_of(h: Harness, clock: Clock) -> Scheduler:
    return Scheduler(h.runs, h.queue, h.repo, clock=clock)


async def a_schedule(h: Harness, cron: str = "* * * * * *", cid: str | None = None, **fields: object) -> Schedule:
    made = ScheduleSpec(Timing(cron), "scheduled hello", cid, **fields).schedule(new_id(), BOOTSTRAP_ID, T0)  # type: ignore[arg-type]
    await h.repo.put_schedule(made)
    return made


async def settle(h: Harness) -> None:
    for active in h.runs.hub.all():
        await active.finished.wait()


async def runs_for(h: Harness, schedule: Schedule) -> list[tuple[datetime, Run]]:
    found = []
    for firing in await h.repo.firings(schedule.id, 100):
        run = await h.repo.get_run(firing.run_id)
        assert run is not None
        found.append((firing.scheduled_for, run))
    return sorted(found, key=lambda f: f[0])


async def test_a_due_firing_starts_a_scheduled_run_in_a_new_conversation() -> None:
    h = make_harness(["answer one"])
    clock = Clock(T0 + timedelta(seconds=1, milliseconds=100))
    s = await a_schedule(h)
    scheduler = scheduler_of(h, clock)
    await h.repo.tick(T0)  # a process ticked a moment ago: nothing was missed
    assert await scheduler.tick() == 1
    await settle(h)
    [(at, run)] = await runs_for(h, s)
    assert at == T0 + timedelta(seconds=1) and run.trigger is RunTrigger.SCHEDULE and run.status is RunStatus.COMPLETED
    thread = await h.conversations.get(run.conversation_id)
    assert [m.content for m in thread.messages][:2] == ["scheduled hello", "answer one"]
    assert h.metrics.counts["schedule_firings"][("started",)] == 1
    assert h.metrics.observed["schedule_lateness"][("started",)] == [0.1]
    stored = await h.repo.schedule(s.id)
    assert stored is not None and stored.next_at == T0 + timedelta(seconds=2)


async def test_late_firings_run_one_each_in_order_while_processes_tick() -> None:
    h = make_harness()
    clock = Clock(T0 + timedelta(seconds=3, milliseconds=500))
    s = await a_schedule(h)
    await h.repo.tick(T0 + timedelta(seconds=3))
    assert await scheduler_of(h, clock).tick() == 3
    await settle(h)
    assert [at for at, _ in await runs_for(h, s)] == [T0 + timedelta(seconds=n) for n in (1, 2, 3)]


async def test_two_processes_ticking_at_once_start_each_firing_once() -> None:
    h = make_harness()
    other = Scheduler(h.runs, h.queue, h.repo, clock=Clock(T0 + timedelta(seconds=2, milliseconds=1)))
    s = await a_schedule(h)
    await h.repo.tick(T0 + timedelta(seconds=2))
    started = await asyncio.gather(scheduler_of(h, Clock(T0 + timedelta(seconds=2, milliseconds=1))).tick(), other.tick())
    await settle(h)
    assert sum(started) == 2
    assert [at for at, _ in await runs_for(h, s)] == [T0 + timedelta(seconds=1), T0 + timedelta(seconds=2)]


async def test_a_firing_that_meets_a_run_going_is_queued_behind_it() -> None:
    h = make_harness(["slow " * 40, "scheduled answer"], delay=0.02)
    going = await h.runs.start(SendMessage("busy"))
    cid = going.conversation_id
    s = await a_schedule(h, cid=cid)
    await h.repo.tick(T0)
    assert await scheduler_of(h, Clock(T0 + timedelta(seconds=1))).tick() == 1
    [firing] = await h.repo.firings(s.id, 10)
    assert firing.queued and firing.conversation_id == cid
    assert [q.text for q in await h.repo.queued(cid)] == ["scheduled hello"]
    assert h.metrics.counts["schedule_firings"][("queued",)] == 1
    while (run := await h.repo.get_run(firing.run_id)) is None or run.status is RunStatus.RUNNING:
        await settle(h)
        await asyncio.sleep(0.01)  # the queued run starts in the outcome's transaction, then runs
    assert run.status is RunStatus.COMPLETED and run.trigger is RunTrigger.QUEUE


async def test_firings_missed_while_no_process_ran_run_once_as_the_latest() -> None:
    h = make_harness()
    s = await a_schedule(h, "0 * * * *")  # hourly, first at 09:00
    await h.repo.tick(T0)  # the last tick before everything went down, at 08:00
    clock = Clock(T0 + timedelta(hours=5, minutes=10))
    assert await scheduler_of(h, clock).tick() == 1
    await settle(h)
    assert [at for at, _ in await runs_for(h, s)] == [T0 + timedelta(hours=5)]  # 13:00, once, not five times
    stored = await h.repo.schedule(s.id)
    assert stored is not None and stored.next_at == T0 + timedelta(hours=6)
    assert await scheduler_of(h, clock).tick() == 0


async def test_firings_missed_while_no_process_ran_are_skipped_with_catch_up_skip() -> None:
    h = make_harness()
    s = await a_schedule(h, "0 * * * *", catch_up=CatchUp.SKIP)
    await h.repo.tick(T0)
    assert await scheduler_of(h, Clock(T0 + timedelta(hours=5, minutes=10))).tick() == 0
    assert await h.repo.firings(s.id, 10) == []
    stored = await h.repo.schedule(s.id)
    assert stored is not None and stored.next_at == T0 + timedelta(hours=6)
    assert h.metrics.counts["schedule_firings"][("skipped",)] == 1


async def test_a_firing_whose_run_died_before_its_message_was_saved_starts_again_once() -> None:
    h = make_harness(["the redo's answer"])
    h.processes.dead.add(999)
    s = await a_schedule(h)
    cid = new_id()
    await h.repo.create_conversation(cid, "scheduled", T0)
    # a process claimed the firing with its run, then was killed before the message was saved
    dead = RunOwner(h.processes.me.host, 999, 1.0, "dead-instance")
    lost = Run(new_id(), cid, RunStatus.RUNNING, T0, owner=dead, base_count=1, trigger=RunTrigger.SCHEDULE)
    await h.repo.start_run(lost, T0, firing=FiringClaim(s.id, s.next_at, s.next_at + timedelta(seconds=1)))  # type: ignore[arg-type, operator]
    assert await h.supervisor.recover() == 1
    [firing] = await h.repo.redo_firings(10)
    assert firing.run_id == lost.id
    clock = Clock(T0 + timedelta(seconds=1, milliseconds=500))
    await h.repo.tick(clock.at)
    assert await scheduler_of(h, clock).tick() == 1
    await settle(h)
    [(at, run)] = await runs_for(h, s)
    assert at == T0 + timedelta(seconds=1) and run.id != lost.id and run.conversation_id == cid
    assert run.status is RunStatus.COMPLETED
    assert await h.repo.redo_firings(10) == []
    assert h.metrics.counts["schedule_firings"][("redone",)] == 1


async def test_a_paused_schedule_does_not_fire() -> None:
    h = make_harness()
    s = await a_schedule(h, enabled=False)
    await h.repo.tick(T0)
    assert await scheduler_of(h, Clock(T0 + timedelta(seconds=5))).tick() == 0
    assert await h.repo.firings(s.id, 10) == []


async def test_a_draining_process_starts_no_firing() -> None:
    h = make_harness()
    await a_schedule(h)
    h.runs.kernel.refuse_new_runs()
    assert await scheduler_of(h, Clock(T0 + timedelta(seconds=5))).tick() == 0


async def test_a_storage_failure_leaves_the_firing_for_the_next_tick() -> None:
    h = make_harness(["fine"])
    s = await a_schedule(h)
    await h.repo.tick(T0)
    real = h.repo.start_run

    async def failing(*args: object, **kwargs: object) -> None:
        raise StorageFailure("the disk is full")

    h.repo.start_run = failing
    clock = Clock(T0 + timedelta(seconds=1, milliseconds=200))
    assert await scheduler_of(h, clock).tick() == 0
    stored = await h.repo.schedule(s.id)
    assert stored is not None and stored.next_at == T0 + timedelta(seconds=1)  # not passed over
    h.repo.start_run = real
    assert await scheduler_of(h, clock).tick() == 1
    await settle(h)
    assert [at for at, _ in await runs_for(h, s)] == [T0 + timedelta(seconds=1)]


async def test_with_no_enabled_schedule_a_tick_writes_nothing() -> None:
    h = make_harness()
    await a_schedule(h, enabled=False)
    assert await scheduler_of(h, Clock(T0 + timedelta(seconds=5))).tick() == 0
    assert await h.repo.tick(T0) is None  # no tick was recorded before this one


async def test_a_ten_second_stall_of_the_only_process_makes_firings_late_not_missed() -> None:
    h = make_harness()
    s = await a_schedule(h)
    await h.repo.tick(T0)
    clock = Clock(T0 + timedelta(seconds=1, milliseconds=200))
    assert await scheduler_of(h, clock).tick() == 1
    clock.at += timedelta(seconds=10)  # the process (or its database) stalled, or it restarted
    assert await scheduler_of(h, clock).tick() == 10
    await settle(h)
    assert [at for at, _ in await runs_for(h, s)] == [T0 + timedelta(seconds=n) for n in range(1, 12)]


async def test_an_admin_who_sees_everything_may_not_schedule_into_another_users_conversation() -> None:
    h = make_harness()
    cid = new_id()
    await h.repo.create_conversation(cid, "Ann's", T0, owner="ann")
    service = ScheduleService(h.repo, h.runs, clock=Clock(T0))
    with pytest.raises(InvalidInput, match="your own"):
        await service.create(ScheduleSpec(Timing("0 8 * * *"), "hi", cid), by=LOCAL)
    assert await h.repo.schedules() == []
    mine = await service.create(ScheduleSpec(Timing("0 8 * * *"), "hi", cid), by=Principal("ann", "ann", Role.USER))
    assert mine.owner == "ann" and mine.conversation_id == cid
