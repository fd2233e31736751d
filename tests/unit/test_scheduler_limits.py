"""What a schedule's owner allows (issue 46): a firing counts against USER_MAX_ACTIVE_RUNS
(at the limit it waits, late, and runs once when a run of theirs ends: queued, not
skipped), a disabled user's schedules pass over their firings (enabled again, they go on
from the next one, never catching up), and their schedules move with a claim."""

from __future__ import annotations

from datetime import timedelta

from adapters.memory.users import InMemoryUserStore
from domain.commands import SendMessage
from domain.model import RunStatus, new_id
from domain.principals import Principal, Role
from domain.schedules import Schedule, Timing
from services.scheduler import Scheduler
from tests.support.harness import Harness, make_harness
from tests.unit.test_scheduler import T0, Clock, runs_for, settle

ANN = Principal("ann", "ann", Role.USER)


async def anns_schedule(h: Harness) -> Schedule:
    made = Schedule(new_id(), ANN.user_id, Timing("* * * * * *"), "scheduled hello", T0).armed(T0)
    await h.repo.put_schedule(made)
    await h.repo.tick(T0)
    return made


async def test_a_firing_of_a_user_at_their_run_limit_waits_and_runs_once_their_run_ends() -> None:
    h = make_harness(["slow " * 40, "scheduled answer"], delay=0.02)
    h.runs.user_max_active = 1
    busy = await h.runs.start(SendMessage("busy"), by=ANN)
    s = await anns_schedule(h)
    scheduler = Scheduler(h.runs, h.queue, h.repo, clock=Clock(T0 + timedelta(seconds=1)))
    assert await scheduler.tick() == 0
    assert await scheduler.tick() == 0  # still at the limit: still waiting, counted once
    assert h.metrics.counts["schedule_firings"] == {("deferred",): 1}
    stored = await h.repo.schedule(s.id)
    assert stored is not None and stored.next_at == T0 + timedelta(seconds=1)  # not passed over
    await settle(h)
    assert (await h.repo.get_run(busy.run_id)).status is RunStatus.COMPLETED  # type: ignore[union-attr]
    assert await scheduler.tick() == 1
    await settle(h)
    [(at, run)] = await runs_for(h, s)
    assert at == T0 + timedelta(seconds=1) and run.status is RunStatus.COMPLETED


async def test_a_disabled_users_schedule_fires_nothing_and_goes_on_from_its_next_firing_when_enabled() -> None:
    h = make_harness(["answer"])
    users = InMemoryUserStore()
    await users.add_user(ANN.user_id, "ann", Role.USER, T0)
    await users.set_disabled(ANN.user_id, True)
    s = await anns_schedule(h)
    clock = Clock(T0 + timedelta(seconds=5))
    scheduler = Scheduler(h.runs, h.queue, h.repo, clock=clock, users=users)
    assert await scheduler.tick() == 0
    assert await h.repo.firings(s.id, 10) == []
    assert h.metrics.counts["schedule_firings"] == {("skipped",): 1}
    stored = await h.repo.schedule(s.id)
    assert stored is not None and stored.next_at == T0 + timedelta(seconds=6)
    await users.set_disabled(ANN.user_id, False)
    clock.at = T0 + timedelta(seconds=6)
    assert await scheduler.tick() == 1
    await settle(h)
    assert [at for at, _ in await runs_for(h, s)] == [T0 + timedelta(seconds=6)]
