"""The one owner of a process's run lifecycle work, used by the server and the CLI alike:
recover at start, then in the background renew the leases of the runs this process
executes, stop those it lost, obey cancel requests from other processes, write their
events to the log, reclaim runs whose owner died, adopt orphans (AUTO_RESUME), prune old
events; drain on shutdown.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from domain import lifecycle
from domain.approvals import Decision, DecisionType
from domain.commands import Resume
from domain.errors import (
    DecisionRequired,
    RunNotResumable,
    SessionInProgress,
    ShuttingDown,
    SophosError,
    StaleDecision,
)
from domain.lifecycle import Adoption, StopReason
from domain.model import PendingCall, RunTrigger
from services.after_runs import AfterRuns
from services.audit import AuditTrail
from services.handles import StartedRun
from services.kernel import KernelDeps, RunKernel, RunUseCases
from services.pending import annotate_pending
from services.scheduler import Scheduler
from services.webhooks import WebhookService

if TYPE_CHECKING:
    from services.traces import TraceShipper

log = logging.getLogger(__name__)

STOP_GRACE = 5.0  # seconds a stopped run gets to record its outcome at shutdown


class Supervisor:
    """The process's background work over its run kernel; `service` starts the runs it
    resumes (adoption, APPROVAL_TIMEOUT) as a person's would be."""

    def __init__(
        self,
        service: RunUseCases,
        auto_resume: bool = False,
        period: float | None = None,
        signal_seconds: float = 0.2,
        flush_seconds: float = 0.05,
        event_retention: float = 300.0,
        approval_timeout: float = 0.0,
        after_runs: AfterRuns | None = None,
        audit: AuditTrail | None = None,
        scheduler: Scheduler | None = None,
        webhooks: WebhookService | None = None,
        traces: TraceShipper | None = None,
        ship_seconds: float = 1.0,
    ) -> None:
        self.traces = traces  # None: no OTLP endpoint, nothing recorded or shipped
        self.ship_seconds = ship_seconds
        self.audit = audit  # its rows past AUDIT_RETENTION_DAYS are pruned here
        self.scheduler = scheduler  # the schedules' firings (services.scheduler); None: none fire here
        self.webhooks = webhooks  # the runs' webhook calls (services.webhooks); None: none are made here
        self.after_runs = after_runs  # what follows each run here: turns, titles, temporary chats
        self.service = service
        self.approval_timeout = approval_timeout  # seconds; 0: a question waits for ever
        self.auto_resume = auto_resume
        self.period = period or max(service.kernel.deps.lease_seconds / 3, 0.2)
        self.signal_seconds = signal_seconds
        self.flush_seconds = flush_seconds
        self.event_retention = event_retention
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def kernel(self) -> RunKernel:
        return self.service.kernel

    @property
    def deps(self) -> KernelDeps:
        return self.service.kernel.deps

    async def start(self) -> None:
        """Recover what dead owners left, adopt orphans (AUTO_RESUME), then start the
        background loops."""
        recovered = await self.recover()
        if recovered:
            log.info("recovered %d run(s) left running", recovered)
        if self.auto_resume:
            adopted = await self.adopt()
            if adopted:
                log.info("adopted %d interrupted run(s)", len(adopted))
        await self.drain_queues()
        if self.after_runs is not None:
            self.kernel.live.when_ended(self.after_runs.run_ended)
        self._tasks = [
            asyncio.create_task(self._every(self.period, self.maintain_once), name="sophos-maintain"),
            asyncio.create_task(self._every(self.signal_seconds, self.check_signals), name="sophos-signals"),
            asyncio.create_task(self._every(self.flush_seconds, self.flush), name="sophos-events"),
        ]
        if self.scheduler is not None:
            self._tasks.append(
                asyncio.create_task(self._every(self.scheduler.period, self.fire_schedules), name="sophos-schedules")
            )
        if self.webhooks is not None:
            # what any process's runs left in the outbox, after a restart too
            self._tasks.append(
                asyncio.create_task(self._every(self.webhooks.period, self.deliver_webhooks), name="sophos-webhooks")
            )
        if self.traces is not None:
            # ships what any process recorded, after a restart too (services.traces)
            waiting = await self.traces.store.unacknowledged()
            if waiting:
                log.info("%d trace span(s) recorded before this start wait to be shipped", waiting)
            self._tasks.append(asyncio.create_task(self._every(self.ship_seconds, self.ship_traces), name="sophos-traces"))

    async def _every(self, seconds: float, work: Callable[[], Awaitable[object]]) -> None:
        while True:
            await asyncio.sleep(seconds)
            name = getattr(work, "__name__", "maintenance")
            try:
                await work()
            except SophosError as e:
                self.deps.metrics.maintenance_failed(name)
                log.warning("%s: %s", name, e.message)
            except Exception:
                self.deps.metrics.maintenance_failed(name)
                log.exception("%s failed", name)

    # --- the periodic work ------------------------------------------------------------

    async def maintain_once(self) -> None:
        await self.renew()
        await self.retry_unrecorded()
        await self.recover()
        if self.auto_resume:
            await self.adopt()
        await self.drain_queues()
        if self.approval_timeout > 0:
            await self.expire_approvals()
        if self.after_runs is not None:
            await self.after_runs.sweep()
        await self.deps.stores.events.prune(self.event_retention)
        if self.audit is not None:
            await self.audit.prune()
        if self.traces is not None:
            await self.traces.prune()

    async def fire_schedules(self) -> None:
        """Start the schedules' due firings (services.scheduler)."""
        if self.scheduler is not None:
            await self.scheduler.tick()

    async def deliver_webhooks(self) -> None:
        """Call the runs' webhooks that are due (services.webhooks)."""
        if self.webhooks is not None:
            await self.webhooks.deliver_due()

    async def renew(self) -> None:
        """Renew the leases of this process's runs; stop at once those it lost."""
        live, deps = self.kernel.live, self.deps
        ids = [a.run_id for a in live.all() if not a.finishing]
        if not ids:
            return
        renewed = await deps.stores.runs.renew(deps.processes.current(), ids)
        for run_id in set(ids) - renewed:
            active = live.by_run(run_id)
            if active is not None and not active.finishing:
                deps.metrics.lease_lost()
                log.warning("lease lost: another process took the run over", extra=active.context)
                active.request_stop(StopReason.LOST)

    async def check_signals(self) -> None:
        """Obey cancel requests and steering messages sent through other processes."""
        stores = self.deps.stores
        live = [a for a in self.kernel.live.all() if not a.finishing]
        if not live:
            return
        for run_id in await stores.signals.cancel_requested([a.run_id for a in live]):
            self.kernel.stop(run_id, StopReason.CANCEL)
        if stores.queue is not None:
            steered = await stores.queue.steered([a.conversation_id for a in live if not a.steer_requested])
            for active in live:
                if active.conversation_id in steered:
                    active.request_steer()

    async def flush(self) -> None:
        """Write the events published since the last flush, for every local run, at once."""
        live = self.kernel.live
        batches = {a.run_id: items for a in live.all() if (items := a.take_unflushed())}
        if not batches:
            return
        try:
            await self.deps.stores.events.append(batches)
        except Exception:
            for run_id, items in batches.items():  # keep them for the next flush
                active = live.by_run(run_id)
                if active is not None:
                    active.unflushed[:0] = items
            raise
        for run_id, items in batches.items():
            active = live.by_run(run_id)
            if active is not None:
                active.mark_flushed(items)

    async def ship_traces(self) -> int:
        return await self.traces.ship_once() if self.traces is not None else 0

    async def retry_unrecorded(self) -> None:
        await self.kernel.retry_unrecorded()

    async def recover(self) -> int:
        """Reclaim the running runs whose owner is dead or whose lease expired."""
        count = 0
        for run in await self.deps.stores.runs.running_runs(self.deps.lease_seconds):
            if await self.kernel.reclaim(run):
                count += 1
        return count

    async def drain_queues(self) -> list[StartedRun]:
        """Start the queued messages nobody else will (RunKernel.drain_queue)."""
        started = await self.kernel.drain_queue()
        if started:
            log.info("started %d queued message(s)", len(started))
        return started

    async def adopt(self) -> list[StartedRun]:
        """Resume the interrupted conversations a person need not decide on; give up on
        those adopted too often."""
        started: list[StartedRun] = []
        deps, stores = self.deps, self.deps.stores
        for run in await stores.runs.interrupted_conversations():
            cid = run.conversation_id
            if self.kernel.busy(cid):
                continue
            recent = await stores.runs.recent_runs(cid, lifecycle.ADOPTION_ATTEMPTS + 1)
            head = await stores.checkpoints.head(cid)
            pending: tuple[PendingCall, ...] = ()
            if head.awaiting_tools:
                thread = await stores.checkpoints.get_thread(cid)
                pending = await annotate_pending(thread.pending_calls, stores.journal, cid)
            verdict = lifecycle.adoption_verdict(recent, head, pending)
            if verdict is Adoption.LEAVE and await self.service.restartable(run):  # its input is kept: once more
                verdict = lifecycle.restart_verdict(recent)
            ctx = {"conversation_id": cid, "run_id": run.id}
            if verdict is Adoption.GIVE_UP:
                if await stores.runs.give_up(run.id, lifecycle.ADOPTION_FAILED, deps.clock()):
                    deps.metrics.adoption("gave_up")
                    log.warning("gave up resuming after %d attempts", lifecycle.ADOPTION_ATTEMPTS, extra=ctx)
                continue
            if verdict is not Adoption.ADOPT:
                continue
            try:
                started.append(await self.service.start(Resume(cid), trigger=RunTrigger.ADOPT))
                deps.metrics.adoption("adopted")
                log.info("adopted an interrupted run", extra=ctx)
            except (RunNotResumable, DecisionRequired, SessionInProgress, ShuttingDown) as e:
                log.info("not adopted: %s", e.message, extra=ctx)
        return started

    async def expire_approvals(self) -> list[StartedRun]:
        """APPROVAL_TIMEOUT: reject the calls nobody answered in time (the model is told
        so) and continue their conversations, as a person's reject would."""
        started: list[StartedRun] = []
        deps, approvals = self.deps, self.deps.stores.approvals
        cutoff = deps.clock() - timedelta(seconds=self.approval_timeout)
        by_conversation: dict[str, list[str]] = {}
        for request in await approvals.undecided_before(cutoff):
            by_conversation.setdefault(request.conversation_id, []).append(request.call.id)
        message = f"No answer within APPROVAL_TIMEOUT ({self.approval_timeout:g} s)"
        for cid, call_ids in by_conversation.items():
            if self.kernel.busy(cid):
                continue
            decisions = dict.fromkeys(call_ids, Decision(DecisionType.REJECT, message=message))
            ctx = {"conversation_id": cid}
            try:
                started.append(await self.service.start(Resume(cid, decisions=decisions)))
                log.info("rejected %d unanswered tool call(s) after %g s", len(call_ids), self.approval_timeout, extra=ctx)
            except StaleDecision:
                # their calls are no longer pending: close the questions so they are not asked again
                reject = Decision(DecisionType.REJECT, message=message)
                await approvals.decide(cid, dict.fromkeys(call_ids, reject), deps.clock())
            except (RunNotResumable, DecisionRequired, SessionInProgress, ShuttingDown) as e:
                log.info("unanswered tool calls not rejected yet: %s", e.message, extra=ctx)
        return started

    # --- shutdown ---------------------------------------------------------------------

    async def drain(self, timeout: float) -> int:
        """Refuse new runs, let active ones finish for up to `timeout` seconds, then stop
        the rest as `interrupted` (resumable, adoptable). Returns how many were stopped."""
        kernel = self.kernel
        kernel.refuse_new_runs()
        pending = kernel.live.all()
        if pending:
            log.info("draining %d run(s) for up to %.0f s", len(pending), timeout)
            waits = [asyncio.ensure_future(a.finished.wait()) for a in pending]
            _, late = await asyncio.wait(waits, timeout=timeout) if timeout > 0 else (set(), set(waits))
            for w in late:
                w.cancel()
        left = kernel.live.all()
        try:
            await asyncio.wait_for(kernel.stop_all(StopReason.SHUTDOWN), STOP_GRACE)
        except TimeoutError:
            log.error("%d run(s) did not stop within %.0f s", len(kernel.live.all()), STOP_GRACE)
        return len(left)

    async def close(self) -> None:
        """Stop the background loops; write the last events."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self.after_runs is not None:
            await self.after_runs.close()
        try:
            await self.flush()
            await self.retry_unrecorded()
        except Exception:
            log.exception("final flush failed")
        await self._close_traces()

    async def _close_traces(self) -> None:
        if self.traces is None:
            return
        try:  # what ended before the shutdown, if the receiver answers in time; the rest waits in the database
            await asyncio.wait_for(self.traces.ship_once(), STOP_GRACE)
        except Exception as e:
            log.warning("the last spans were not shipped at shutdown (%s): the next start ships them", type(e).__name__)
        await self.traces.aclose()
