"""The scheduler: each tick starts the schedules' due firings (domain.schedules.plan_tick)
through the run kernel's one door, the run use case's `start` (or the queue, when the
conversation has a run going: its multitask rule, queue by default) or, for a hosted
graph's schedule (a LangGraph cron), the hosted runs' `fire` (services.hosted), with the firing's
claim in the transaction that creates the run or queues the message (ports.schedules). Any
number of processes tick on one store: the claim lets one of them start each firing, and
a firing whose run stopped before its message was saved is started again by whichever
ticks next. The supervisor runs it in the server (services.supervisor)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Protocol

from domain.commands import SendMessage
from domain.crons import GraphInput
from domain.errors import (
    FiringTaken,
    NotSupported,
    SessionInProgress,
    ShuttingDown,
    SophosError,
    StorageFailure,
    UserLimitReached,
)
from domain.model import RunTrigger
from domain.principals import Principal, Role
from domain.queue import Multitask, QueuedMessage
from domain.schedules import GAP_SECONDS, Firing, FiringClaim, Schedule, TickPlan, lateness, plan_tick
from ports.schedules import ScheduleStore
from ports.users import UserStore
from services.handles import StartedRun
from services.kernel import RunUseCases
from services.queueing import QueueService

log = logging.getLogger(__name__)

WATCHED = timedelta(days=36_500)  # how far ahead `due` reads to find every enabled schedule
BATCH = 50  # schedules (and firings to start again) read per tick
LATE_PER_TICK = 20  # late firings of one schedule started per tick, in order
# a firing that meets these is left for the next tick; any other refusal passes it over.
# UserLimitReached: the owner is at USER_MAX_ACTIVE_RUNS; the firing waits (late) until a
# run of theirs ends, then runs once (counted `deferred` once per firing and process)
TRY_AGAIN = (FiringTaken, ShuttingDown, StorageFailure, SessionInProgress, UserLimitReached)


class GraphFirings(Protocol):
    """Starts a hosted graph's firing (services.hosted.HostedRuns.fire): on `thread_id`, or on
    a new thread of `by`'s (None), `firing` claimed in the run's insert (FiringTaken: taken)."""

    async def fire(
        self, graph: GraphInput, thread_id: str | None, firing: FiringClaim, *, by: Principal, webhook: str | None = None
    ) -> StartedRun: ...


class Scheduler:
    """`period`: seconds between ticks; `gap`: a tick this long after the last one (of any
    process) means every process was down, and the firings between were missed."""

    def __init__(
        self,
        service: RunUseCases,
        queue: QueueService,
        store: ScheduleStore,
        period: float = 0.5,
        gap: float = GAP_SECONDS,
        clock: Callable[[], datetime] | None = None,
        hosted: Callable[[], GraphFirings] | None = None,
        users: UserStore | None = None,
    ) -> None:
        self.clock = clock or service.kernel.deps.clock  # a test's hand-driven clock
        self.hosted: Callable[[], GraphFirings] | None = hosted  # a LangGraph cron's firing starts a hosted run
        self.service = service
        self.queue = queue
        self.store = store
        self.period = period
        self.gap = max(gap, 2 * period)
        self.users = users  # whose accounts are disabled (None: no users to ask)
        self._deferred: set[tuple[str, datetime]] = set()  # firings counted `deferred` here

    async def tick(self) -> int:
        """Start what is due now; how many firings started (or were queued)."""
        kernel = self.service.kernel
        if kernel.draining:
            return 0
        now = self.clock()
        started = 0
        for firing in await self.store.redo_firings(BATCH):
            started += await self._redo(firing)
        # the enabled schedules, soonest first: with none, no firing can be missed, so the
        # tick is not recorded (an idle server writes nothing)
        armed = await self.store.due(now + WATCHED, BATCH)
        if not armed:
            return started
        last = await self.store.tick(now)
        for schedule in armed:
            if schedule.next_at is not None and schedule.next_at <= now:
                if await self._owner_disabled(schedule.owner):
                    await self._pass_over(schedule, now)
                    continue
                started += await self._run_due(schedule, now, last)
        return started

    async def _run_due(self, schedule: Schedule, now: datetime, last: datetime | None) -> int:
        """Start the firings of `schedule` due at `now` (this tick's time, however long
        starting them takes), late ones one by one in order."""
        started = 0
        for _ in range(LATE_PER_TICK):
            plan = plan_tick(schedule, now, last, self.gap)
            if plan is None:
                break
            if plan.fire is None:
                await self.skip_missed(schedule, plan)
                break
            if not await self._fire(schedule, plan):
                break
            started += 1
            schedule = replace(schedule, next_at=plan.following)
        return started

    async def _owner_disabled(self, owner: str) -> bool:
        if self.users is None:
            return False
        user = await self.users.user(owner)
        return user is not None and user.disabled

    async def _pass_over(self, schedule: Schedule, now: datetime) -> None:
        """A disabled user's schedule fires nothing: its firings due now are passed over
        (enabled again, it goes on from its next firing, never catching up)."""
        assert schedule.next_at is not None
        if await self.store.advance(schedule.id, schedule.next_at, schedule.following(now)):
            self.service.kernel.deps.metrics.schedule_fired("skipped", 0.0)
            log.info("firing of the schedule passed over: its owner is disabled", extra={"schedule_id": schedule.id})

    async def _fire(self, schedule: Schedule, plan: TickPlan) -> bool:
        """Start `plan.fire`; False when nothing more of this schedule is to start now."""
        metrics, now = self.service.kernel.deps.metrics, self.clock()
        ctx = {"schedule_id": schedule.id, "conversation_id": schedule.conversation_id}
        assert plan.fire is not None and schedule.next_at is not None
        if plan.missed_some:
            log.info("missed firings of the schedule: running the latest (%s) once", plan.fire.isoformat(), extra=ctx)
        claim = FiringClaim(schedule.id, plan.fire, plan.following, expected=schedule.next_at)
        try:
            answer = await self._start(schedule, schedule.conversation_id, claim)
        except UserLimitReached:
            self._defer(schedule, plan.fire)
            return False
        except TRY_AGAIN:
            # another process started it (or the schedule changed), or this one cannot now:
            # the next tick (here or elsewhere) sees what is left
            return False
        except SophosError as e:
            # the firing cannot start (its conversation's queue is full, the model is unknown...):
            # it is passed over rather than tried again on every tick
            log.warning("firing of the schedule failed: %s", e.message, extra=ctx)
            metrics.schedule_fired("failed", 0.0)
            return await self.store.advance(schedule.id, schedule.next_at, plan.following)
        outcome = "queued" if isinstance(answer, QueuedMessage) else "started"
        metrics.schedule_fired(outcome, lateness(plan.fire, now))
        log.info("schedule fired for %s: %s %s", plan.fire.isoformat(), outcome, _id_of(answer), extra=ctx)
        return True

    def _defer(self, schedule: Schedule, fire: datetime) -> None:
        """The owner is at USER_MAX_ACTIVE_RUNS: the firing waits for a run of theirs to end."""
        if (schedule.id, fire) not in self._deferred:
            if len(self._deferred) > 10_000:
                self._deferred.clear()
            self._deferred.add((schedule.id, fire))
            self.service.kernel.deps.metrics.schedule_fired("deferred", 0.0)
            log.info(
                "firing for %s waits: its owner is at USER_MAX_ACTIVE_RUNS", fire.isoformat(), extra={"schedule_id": schedule.id}
            )

    async def _redo(self, firing: Firing) -> int:
        """Start again a firing whose run stopped before its message was saved."""
        schedule = await self.store.schedule(firing.schedule_id)
        if schedule is None:
            return 0
        claim = FiringClaim(schedule.id, firing.scheduled_for, None, redo=True)
        ctx = {"schedule_id": schedule.id, "conversation_id": firing.conversation_id}
        try:
            answer = await self._start(schedule, firing.conversation_id, claim)
        except TRY_AGAIN:
            return 0
        except SophosError as e:
            log.warning("firing of the schedule not started again yet: %s", e.message, extra=ctx)
            return 0
        self.service.kernel.deps.metrics.schedule_fired("redone", lateness(firing.scheduled_for, self.clock()))
        log.info("firing for %s started again: %s", firing.scheduled_for.isoformat(), _id_of(answer), extra=ctx)
        return 1

    async def _start(self, schedule: Schedule, cid: str | None, claim: FiringClaim) -> StartedRun | QueuedMessage:
        """The one door of a firing: Sophos's agent's message through the queue (the
        conversation's multitask rule: queued behind a run going), or a hosted graph's run
        with its own input (a run going: SessionInProgress, tried again at the next tick)."""
        if schedule.graph is None:
            command = SendMessage(schedule.message, cid, multitask=Multitask.ENQUEUE, webhook=schedule.webhook)
            return await self.queue.enqueue(command, by=owner_of(schedule), firing=claim, trigger=RunTrigger.SCHEDULE)
        if self.hosted is None:
            raise NotSupported("This server hosts no graphs: the schedule's graph cannot run")
        return await self.hosted().fire(schedule.graph, cid, claim, by=owner_of(schedule), webhook=schedule.webhook)

    async def skip_missed(self, schedule: Schedule, plan: TickPlan) -> bool:
        """catchUp skip: pass over the missed firings without running them."""
        assert schedule.next_at is not None
        skipped = await self.store.advance(schedule.id, schedule.next_at, plan.following)
        if skipped:
            self.service.kernel.deps.metrics.schedule_fired("skipped", 0.0)
            log.info("missed firings of the schedule skipped", extra={"schedule_id": schedule.id})
        return skipped


def owner_of(schedule: Schedule) -> Principal:
    """The schedule's owner, as its runs act: a user who reaches their own conversations."""
    return Principal(schedule.owner, schedule.owner, Role.USER)


def _id_of(answer: StartedRun | QueuedMessage) -> str:
    return answer.id if isinstance(answer, QueuedMessage) else answer.run_id
