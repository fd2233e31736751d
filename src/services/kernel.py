"""The one owner of this process's live runs.

A run is owned by the store, not by a process: its row says who executes it, the owner
renews a lease, every checkpoint and the outcome are written only while the row is still
its own. The kernel is this process's half of that: the runs it executes (services.hub),
the rows it is recording and will execute (recovery must leave them), and the outcomes the
store refused (retried with their real code). Nobody else touches that state: the use cases
(services.runs), the supervisor, the queue and the followers use what it offers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import Protocol

from domain import lifecycle
from domain.commands import Cancel, StartRun
from domain.errors import SessionInProgress, StorageFailure
from domain.lifecycle import Outcome, StopReason
from domain.model import Conversation, Run, RunStatus, RunTrigger, new_id, utc_now
from domain.principals import LOCAL, Principal
from domain.queue import QueuedMessage, queue_due
from domain.schedules import FiringClaim
from ports.metrics import NO_METRICS, MetricsPort
from ports.processes import ProcessPort
from ports.runs import RunFinish
from services.handles import CancelResult, LiveRun, RunStores, StartedRun
from services.hub import ActiveRun, RunHub
from services.unsaved import UnsavedOutcomes

log = logging.getLogger(__name__)

Body = Callable[[ActiveRun], Awaitable[Outcome]]  # executes a run; what it comes to (services.execution)
# executes the run the store started for a queued message (its input is planned by the use case)
StartQueued = Callable[[Run, QueuedMessage], StartedRun]


@dataclass(frozen=True)
class KernelDeps:
    """What the kernel works with: the stores, this process, time, metrics, and its policy."""

    stores: RunStores
    processes: ProcessPort
    clock: Callable[[], datetime] = utc_now
    metrics: MetricsPort = NO_METRICS
    lease_seconds: float = 30.0  # RUN_LEASE_SECONDS: a running row not renewed this long is reclaimable
    poll_seconds: float = 0.1  # how often a waiter reads a row again (a cancel's wait)
    unsaved: UnsavedOutcomes = field(default_factory=UnsavedOutcomes)  # outcomes the store refused, as reads show them


class LiveRuns(Protocol):
    """This process's live runs, read-only (the kernel alone adds and removes them)."""

    def get(self, conversation_id: str) -> ActiveRun | None: ...

    def by_run(self, run_id: str) -> ActiveRun | None: ...

    def all(self) -> list[ActiveRun]: ...

    def when_ended(self, listener: Callable[[ActiveRun], None]) -> None:
        """Call `listener` with each run of this process that ends from now on (services.hub)."""


class RunKernel:
    """Launches, stops and finishes the runs this process executes; reclaims those nobody
    executes any more; starts the queued messages it is handed."""

    def __init__(self, deps: KernelDeps, start_queued: StartQueued, hub: RunHub | None = None) -> None:
        self.deps = deps
        self._start_queued = start_queued
        self._hub = hub if hub is not None else RunHub()
        self._starting: set[str] = set()  # recorded, not yet in the hub: executed here all the same
        # conversations whose queued message this process is starting: the run's id is the
        # message's, known once the store has claimed it (ports.queue.start_queued)
        self._claiming: set[str] = set()
        self._unrecorded: dict[str, tuple[ActiveRun, RunFinish]] = {}  # outcomes the store refused
        self._draining = False

    # --- what runs here -------------------------------------------------------------------

    @property
    def live(self) -> LiveRuns:
        return self._hub

    @property
    def draining(self) -> bool:
        return self._draining

    def refuse_new_runs(self) -> None:
        """From now on this process starts no run (a drain has begun)."""
        self._draining = True

    def busy(self, conversation_id: str) -> bool:
        """Whether this process leaves the conversation alone for now: it executes a run of
        it, or it drains. Background work (adoption, expiry, the queue) skips it."""
        return self._draining or self._hub.get(conversation_id) is not None

    async def live_run(self, conversation_id: str) -> LiveRun | None:
        """The conversation's running run, wherever it executes."""
        active = self._hub.get(conversation_id)
        if active is not None:
            return LiveRun(active.run_id, active.base_count)
        latest = await self.deps.stores.runs.latest_run(conversation_id)
        if latest is not None and latest.status is RunStatus.RUNNING:
            return LiveRun(latest.id, latest.base_count)
        return None

    # --- launching ------------------------------------------------------------------------

    @contextmanager
    def claim(self, run: Run) -> Iterator[Run]:
        """While the caller records `run` as this process's and launches it: recovery leaves
        the row alone meanwhile. A queued run is known by its conversation too, since the
        store gives it its message's id."""
        queued = run.trigger is RunTrigger.QUEUE
        self._starting.add(run.id)
        if queued:
            self._claiming.add(run.conversation_id)
        try:
            yield run
        finally:
            self._starting.discard(run.id)
            if queued:
                self._claiming.discard(run.conversation_id)

    def launch(self, run: Run, body: Body, *, needs_input: bool) -> ActiveRun:
        """Execute a recorded run here, as a task: in the live runs (replacing the run it
        follows) until `body` comes to its outcome and the outcome is recorded."""
        stores = self.deps.stores
        active = ActiveRun(
            run.id, run.conversation_id, run.base_count, needs_input=needs_input, history=partial(stores.events.read, run.id)
        )
        self._hub.add(active)
        self.deps.metrics.run_started(run.trigger.value)
        log.info("run started (%s)", run.trigger.value, extra=active.context)
        active.task = asyncio.create_task(self._execute(active, body), name=f"run-{run.id}")
        return active

    async def _execute(self, active: ActiveRun, body: Body) -> None:
        await self._finish(active, await body(active))

    # --- stopping ---------------------------------------------------------------------------

    def stop(self, run_id: str, reason: StopReason) -> ActiveRun | None:
        """Stop run `run_id` if this process executes it (see ActiveRun.request_stop); the
        run, to wait for its end."""
        active = self._hub.by_run(run_id)
        if active is not None:
            active.request_stop(reason)
        return active

    async def stop_all(self, reason: StopReason = StopReason.SHUTDOWN) -> None:
        runs = self._hub.all()
        for active in runs:
            active.request_stop(reason)
        await asyncio.gather(*(a.finished.wait() for a in runs))

    # --- finishing ----------------------------------------------------------------------------

    async def _finish(self, active: ActiveRun, outcome: Outcome) -> None:
        ctx = active.context
        if outcome.error is not None and outcome.status is RunStatus.FAILED:
            code = outcome.error.code
            log.warning(
                "run failed: %s %s",
                code,
                outcome.error.message,
                extra=ctx,
                exc_info=active.failure if code == "AGENT_FAILURE" else None,
            )
        active.outcome = outcome
        event = lifecycle.terminal_event(active.conversation_id, outcome)
        if outcome.recorded:
            finish = RunFinish(outcome.status, self.deps.clock(), outcome.error, None, event, active.next_id)
            await self._record(active, finish)
        else:
            log.warning("run lost to another process; this process wrote nothing more", extra=ctx)
        active.publish(event, durable=False)
        self._hub.remove(active)
        status = outcome.status.value if outcome.recorded else "lost"
        error = outcome.error.code if outcome.error else None
        self.deps.metrics.run_finished(status, error, time.monotonic() - active.began)
        log.info("run finished: %s", outcome.status.value, extra=ctx)

    async def _record(self, active: ActiveRun, finish: RunFinish) -> bool:
        """Flush the run's events and write its outcome (fenced by ownership), starting the
        next queued message with it. A store that refuses keeps the outcome for the
        supervisor to retry with its real code."""
        items = active.take_unflushed()  # written with the outcome, in its transaction
        stores, owner = self.deps.stores, self.deps.processes.current()
        try:
            if finish.status is RunStatus.COMPLETED:  # every write of the run was awaited
                count = await stores.checkpoints.count_written(active.conversation_id, active.run_id)
            else:
                count = (await stores.checkpoints.head(active.conversation_id)).message_count
            then = self._next_run(active, finish.status, count)
            whole = replace(
                finish,
                message_count=count,
                events=tuple(items),
                then=then,
                input_recorded=active.input_recorded.is_set() or not active.needs_input,
            )
            with self.claim(then) if then is not None else nullcontext(None):  # executed here once recorded
                written = await stores.runs.finish_run(active.run_id, whole, owner=owner)
                if then is not None and isinstance(written, QueuedMessage):
                    self._start_queued(replace(then, id=written.run_id or then.id), written)
        except Exception as e:
            active.unflushed[:0] = items  # for the retry
            if active.run_id in self._unrecorded:  # the first refusal was logged whole
                log.debug("could not record the outcome of the run yet: %s", e, extra=active.context)
            else:
                log.exception("could not record the outcome of the run; will retry", extra=active.context)
            self._unrecorded[active.run_id] = (active, finish)
            self.deps.unsaved.keep(active.conversation_id, active.run_id, finish.status, finish.error)
            return False
        self._unrecorded.pop(active.run_id, None)
        self.deps.unsaved.drop(active.conversation_id, active.run_id)
        if not written:
            log.warning("the outcome was not recorded: the run is no longer this process's", extra=active.context)
        return True

    def _next_run(self, active: ActiveRun, status: RunStatus, count: int) -> Run | None:
        """The run the store starts for the next queued message if this one completed."""
        if self.deps.stores.queue is None or status is not RunStatus.COMPLETED or self._draining:
            return None
        base = count + 1  # the queued message is its first
        return Run(
            new_id(),
            active.conversation_id,
            RunStatus.RUNNING,
            self.deps.clock(),
            owner=self.deps.processes.current(),
            base_count=base,
            trigger=RunTrigger.QUEUE,
        )

    async def retry_unrecorded(self) -> None:
        """Write again the outcomes the store refused earlier (see `_record`)."""
        for active, finish in list(self._unrecorded.values()):
            await self._record(active, finish)

    # --- runs nobody executes -------------------------------------------------------------

    async def reclaim(self, run: Run, outcome: Outcome | None = None) -> bool:
        """Record a `running` run that nobody executes any more as stopped (the verdict of
        its thread, or `outcome`), with its terminal event. Never touches a live run: the
        write is a compare-and-set on the heartbeat the caller read."""
        processes = self.deps.processes
        here = (
            self._hub.by_run(run.id) is not None
            or run.id in self._starting
            or (run.trigger is RunTrigger.QUEUE and run.conversation_id in self._claiming)
        )
        alive = processes.is_alive(run.owner) if run.owner else None
        if not lifecycle.reclaimable(run, processes.current(), here, alive):
            return False
        mine = self._unrecorded.get(run.id)
        if mine is not None:  # our own outcome, refused by the store earlier: its real code
            return await self._record(*mine)
        head = await self.deps.stores.checkpoints.head(run.conversation_id)
        verdict = outcome or lifecycle.recovery_verdict(run, head)
        event = lifecycle.terminal_event(run.conversation_id, verdict)
        # a queued message this run took in goes back to the queue unless the thread has it
        recorded = lifecycle.input_saved(run, head)
        finish = RunFinish(verdict.status, self.deps.clock(), verdict.error, head.message_count, event, input_recorded=recorded)
        unsaved = self.deps.unsaved
        try:  # no `then`: True or False
            changed = bool(await self.deps.stores.runs.finish_run(run.id, finish, heartbeat=run.heartbeat_at))
        except StorageFailure:  # reads show the verdict meanwhile: the run is not running
            unsaved.keep(run.conversation_id, run.id, verdict.status, verdict.error)
            raise
        unsaved.drop(run.conversation_id, run.id)
        if changed:
            self.deps.metrics.run_reclaimed(verdict.status.value)
            ctx = {"conversation_id": run.conversation_id, "run_id": run.id}
            log.info("reclaimed run as %s", verdict.status.value, extra=ctx)
        return changed

    async def drain_queue(self) -> list[StartedRun]:
        """Start the queues whose last run leaves nobody to start them (domain.queue.queue_due):
        after a restart, a reclaim, or a queued run that died before its message was saved.
        Any process may: the store's compare-and-set on the latest run lets one win."""
        stores, started = self.deps.stores, list[StartedRun]()
        queue = stores.queue
        if queue is None:
            return started
        for cid in await queue.queued_conversations():
            if self.busy(cid):
                continue
            latest = await stores.runs.latest_run(cid)
            if not queue_due(latest):
                continue
            head = await stores.checkpoints.head(cid)
            run = Run(
                new_id(),
                cid,
                RunStatus.RUNNING,
                self.deps.clock(),
                owner=self.deps.processes.current(),
                base_count=head.message_count + 1,
                trigger=RunTrigger.QUEUE,
            )
            with self.claim(run):  # the run's id becomes the message's: recovery knows it by its conversation
                try:
                    claimed = await queue.start_queued(run, self.deps.clock(), latest.id if latest else None)
                except SessionInProgress:
                    continue  # another process started a run meanwhile
                if claimed is not None:
                    started.append(self._start_queued(replace(run, id=claimed.run_id or run.id), claimed))
        return started


class RunUseCases(Protocol):
    """What the supervisor and the queue ask of the run use cases (services.runs): the
    kernel they run on, and starting and cancelling runs as a person would."""

    @property
    def kernel(self) -> RunKernel: ...

    async def start(
        self,
        command: StartRun,
        trigger: RunTrigger = RunTrigger.USER,
        *,
        by: Principal = LOCAL,
        firing: FiringClaim | None = None,
    ) -> StartedRun: ...

    async def cancel(self, command: Cancel, *, by: Principal = LOCAL) -> CancelResult: ...

    async def restartable(self, run: Run) -> bool:
        """Whether an orphan whose input never reached its thread starts again (a hosted
        graph's run) rather than waiting for its client to send it again."""
        ...

    async def visible(self, conversation_id: str, by: Principal) -> Conversation: ...

    async def admit(self, by: Principal) -> None: ...
