"""Use cases that drive runs: send a message, resume, cancel, drain, recover."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from domain.errors import (
    AgentFailure,
    ConversationNotFound,
    DecisionRequired,
    InvalidInput,
    NoActiveRun,
    RunNotResumable,
    SessionInProgress,
    ShuttingDown,
    to_chat_error,
)
from domain.events import InputRecorded, StreamEvent, StreamTranslator
from domain.hub import ActiveRun, RunHub
from domain.model import (
    PendingCall,
    Run,
    RunError,
    RunStatus,
    new_id,
    parse_conversation_id,
    title_from_message,
    utc_now,
)
from ports.checkpoints import CheckpointPort
from ports.engine import AgentEngine, NewMessage, Resume, RunInput
from ports.journal import ToolJournal
from ports.processes import ProcessPort
from ports.runs import RunRepository

log = logging.getLogger(__name__)

DEFAULT_RECURSION_LIMIT = 25
INPUT_NOT_RECORDED = RunError(
    "INPUT_NOT_RECORDED",
    "The run stopped before its message was saved; send the message again.",
)


def annotate_pending(
    pending: tuple[PendingCall, ...], journal: ToolJournal | None, conversation_id: str
) -> tuple[PendingCall, ...]:
    """Mark the pending calls that were started (per the journal) and are unsafe to repeat."""
    if journal is None or not pending:
        return pending
    entries = journal.entries(f"{conversation_id}:{p.call.id}" for p in pending)
    out = []
    for p in pending:
        entry = entries.get(f"{conversation_id}:{p.call.id}")
        out.append(PendingCall(p.call, started=entry is not None, unsafe=bool(entry and entry.unsafe)))
    return tuple(out)


@dataclass(frozen=True)
class StartedRun:
    conversation_id: str
    run_id: str


@dataclass(frozen=True)
class RunOutcome:
    conversation_id: str
    run_id: str
    status: RunStatus
    error: RunError | None = None


class RunService:
    """Starts runs as owned background tasks and records their outcome.

    The run row is `running` before the graph runs; the outcome is committed before the
    stream's last event (`end` or `chat-error`) is published.
    """

    def __init__(
        self,
        runs: RunRepository,
        checkpoints: CheckpointPort,
        engine: AgentEngine,
        processes: ProcessPort,
        hub: RunHub,
        recursion_limit: int = DEFAULT_RECURSION_LIMIT,
        lease_seconds: float = 30.0,
        clock: Callable[[], datetime] = utc_now,
        journal: ToolJournal | None = None,
    ) -> None:
        self.journal = journal
        self.runs = runs
        self.checkpoints = checkpoints
        self.engine = engine
        self.processes = processes
        self.hub = hub
        self.recursion_limit = recursion_limit if recursion_limit > 0 else DEFAULT_RECURSION_LIMIT
        self.lease = timedelta(seconds=lease_seconds)
        self.clock = clock
        self.draining = False

    # --- starting -----------------------------------------------------------------------

    async def start(
        self,
        message: str | None,
        conversation: object = None,
        resume: bool = False,
        decision: str | None = None,
    ) -> StartedRun:
        """Validate in the contract's order, record the run and (for a message) the input,
        then execute in the background. Returns once the input is durable."""
        if self.draining:
            raise ShuttingDown()
        text = message.strip() if isinstance(message, str) else ""
        if not resume and not text:
            raise InvalidInput("Message is required")
        if decision is not None and decision not in ("retry", "skip"):
            raise InvalidInput('decision must be "retry" or "skip"')
        if conversation is None:
            if resume:
                raise InvalidInput("A conversation is required to resume")
            cid = new_id()
            self.runs.create_conversation(cid, title_from_message(text), self.clock())
        else:
            cid = parse_conversation_id(conversation)
            if self.runs.get_conversation(cid) is None:
                raise ConversationNotFound()
        self._refuse_if_active(cid)
        skip: frozenset[str] = frozenset()
        if resume:
            head = self.checkpoints.head(cid)
            if not head.next:
                raise RunNotResumable()
            pending = self.checkpoints.get_thread(cid).pending_calls if "tools" in head.next else ()
            unknown = [p for p in annotate_pending(pending, self.journal, cid) if p.needs_decision]
            if unknown and decision is None:
                raise DecisionRequired()
            if decision == "skip":
                skip = frozenset(p.call.id for p in unknown)
        return await self._launch(cid, None if resume else text, skip)

    def _refuse_if_active(self, cid: str) -> None:
        if self.hub.get(cid) is not None:
            raise SessionInProgress()
        latest = self.runs.latest_run(cid)
        if latest is not None and latest.status is RunStatus.RUNNING:
            # a row left by a dead process is reclaimed here rather than blocking the user
            if not self._reclaim(latest):
                raise SessionInProgress()

    async def _launch(self, cid: str, text: str | None, skip: frozenset[str] = frozenset()) -> StartedRun:
        now = self.clock()
        run = Run(new_id(), cid, RunStatus.RUNNING, now, owner=self.processes.current())
        self.runs.start_run(run, now)  # raises SessionInProgress if another process won
        active = ActiveRun(run.id, cid)
        if text is None:
            active.base_count = self.checkpoints.head(cid).message_count
        self.hub.add(active)
        log.info("run started", extra={"conversation_id": cid, "run_id": run.id})
        run_input: RunInput = NewMessage(text) if text is not None else Resume(skip=skip)
        active.task = asyncio.create_task(self._execute(active, run_input), name=f"run-{run.id}")
        if text is not None:
            # acknowledged means durable: return only once the message is committed
            recorded = asyncio.ensure_future(active.input_recorded.wait())
            ended = asyncio.ensure_future(active.finished.wait())
            await asyncio.wait({recorded, ended}, return_when=asyncio.FIRST_COMPLETED)
            recorded.cancel()
            ended.cancel()
            if not active.input_recorded.is_set():
                raise active.failure or AgentFailure("The run stopped before the message was saved")
        return StartedRun(cid, run.id)

    # --- executing ----------------------------------------------------------------------

    async def _execute(self, active: ActiveRun, run_input: RunInput) -> None:
        ctx = {"conversation_id": active.conversation_id, "run_id": active.run_id}
        translator = StreamTranslator()
        status, error = RunStatus.COMPLETED, None
        try:
            async for event in self.engine.run(
                active.conversation_id, active.run_id, run_input, self.recursion_limit
            ):
                if isinstance(event, InputRecorded):
                    active.base_count = self.checkpoints.head(active.conversation_id).message_count
                    active.input_recorded.set()
                    continue
                for out in translator.feed(event):
                    active.publish(out)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            status = active.stop_reason or RunStatus.INTERRUPTED
            log.info("run stopped: %s", status.value, extra=ctx)
        except Exception as e:  # every failure becomes data on the run, never a crash
            active.failure = e
            code, msg = to_chat_error(e)
            status, error = RunStatus.FAILED, RunError(code, msg)
            log.warning("run failed: %s %s", code, msg, extra=ctx, exc_info=code == "AGENT_FAILURE")
        for out in translator.close():
            active.publish(out)
        self._record(active.run_id, active.conversation_id, status, error)
        if error is not None:
            data = {"code": error.code, "message": error.message, "conversation": active.conversation_id}
            active.publish(StreamEvent("chat-error", data))
        else:
            active.publish(StreamEvent("end", {"conversation": active.conversation_id, "status": status.value}))
        self.hub.remove(active)
        log.info("run finished: %s", status.value, extra=ctx)

    def _record(self, run_id: str, cid: str, status: RunStatus, error: RunError | None) -> None:
        ctx = {"conversation_id": cid, "run_id": run_id}
        try:
            count: int | None = self.checkpoints.head(cid).message_count
        except Exception:
            log.exception("could not read the thread to count messages", extra=ctx)
            count = None
        try:
            self.runs.finish_run(run_id, status, count, error, self.clock())
        except Exception:
            log.exception("could not record the outcome of the run", extra=ctx)

    # --- following, stopping ------------------------------------------------------------

    def active(self, conversation_id: str) -> ActiveRun | None:
        return self.hub.get(conversation_id)

    def is_active(self, conversation_id: str) -> bool:
        if self.hub.get(conversation_id) is not None:
            return True
        latest = self.runs.latest_run(conversation_id)
        return latest is not None and latest.status is RunStatus.RUNNING

    async def wait(self, conversation_id: str) -> RunOutcome | None:
        """Wait for this process's active run on the conversation to finish."""
        active = self.hub.get(conversation_id)
        if active is None:
            return None
        await active.finished.wait()
        run = self.runs.get_run(active.run_id)
        if run is None:
            return None
        error = RunError(run.error_code, run.error_message or "") if run.error_code else None
        return RunOutcome(conversation_id, run.id, run.status, error)

    async def cancel(self, conversation: object) -> str:
        """Stop the active run at once; it is recorded `cancelled`. Returns its id."""
        cid = parse_conversation_id(conversation)
        if self.runs.get_conversation(cid) is None:
            raise ConversationNotFound()
        active = self.hub.get(cid)
        if active is None or active.task is None:
            raise NoActiveRun()
        await self._stop(active, RunStatus.CANCELLED)
        return active.run_id

    async def _stop(self, active: ActiveRun, reason: RunStatus) -> None:
        if active.task is not None and not active.task.done():
            active.stop_reason = reason
            active.task.cancel()
        await active.finished.wait()

    async def stop_all(self, reason: RunStatus = RunStatus.INTERRUPTED) -> None:
        await asyncio.gather(*(self._stop(a, reason) for a in self.hub.all()))

    async def drain(self, timeout: float) -> int:
        """Refuse new runs, let active ones finish for up to `timeout` seconds, then stop
        the rest as `interrupted` (resumable). Returns how many had to be stopped."""
        self.draining = True
        pending = [a for a in self.hub.all()]
        if pending:
            log.info("draining %d run(s) for up to %.0f s", len(pending), timeout)
            waits = [asyncio.ensure_future(a.finished.wait()) for a in pending]
            _, late = await asyncio.wait(waits, timeout=timeout)
            for w in late:
                w.cancel()
        left = self.hub.all()
        await self.stop_all(RunStatus.INTERRUPTED)
        return len(left)

    # --- recovery -----------------------------------------------------------------------

    def recover(self) -> int:
        """Reclaim `running` runs whose owner is dead or whose heartbeat is older than the
        lease, reconciling each with its thread. Never touches a live run."""
        count = 0
        for run in self.runs.running_runs():
            if self._reclaim(run):
                count += 1
        return count

    def _reclaimable(self, run: Run) -> bool:
        active = self.hub.get(run.conversation_id)
        if active is not None and active.run_id == run.id:
            return False
        owner = run.owner
        if owner is None:
            return True  # written before runs had owners: a single-process database
        if owner == self.processes.current():
            return True  # ours, yet not executing: its task is gone
        if self.processes.is_alive(owner) is False:
            return True
        beat = run.heartbeat_at or run.started_at
        return self.clock() - beat > self.lease

    def _reclaim(self, run: Run) -> bool:
        if not self._reclaimable(run):
            return False
        ctx = {"conversation_id": run.conversation_id, "run_id": run.id}
        head = self.checkpoints.head(run.conversation_id)
        status, error = RunStatus.INTERRUPTED, None
        if head.run_id == run.id and not head.next:
            status = RunStatus.COMPLETED  # the final checkpoint was written, the outcome not
        elif head.run_id != run.id and not head.next:
            error = INPUT_NOT_RECORDED
        changed = self.runs.finish_run(run.id, status, head.message_count, error, self.clock())
        if changed:
            log.info("recovered run as %s", status.value, extra=ctx)
        return changed

    async def resume_interrupted(self) -> list[StartedRun]:
        """Resume every conversation whose latest run was interrupted and whose thread has
        pending work that needs no decision (AUTO_RESUME)."""
        started = []
        for conv in self.runs.list_conversations():
            if conv.status is not RunStatus.INTERRUPTED or self.hub.get(conv.id):
                continue
            try:
                started.append(await self.start(None, conv.id, resume=True))
            except (RunNotResumable, DecisionRequired, SessionInProgress) as e:
                log.info("not resumed: %s", e.message, extra={"conversation_id": conv.id})
        return started

    def heartbeat(self) -> None:
        ids = [a.run_id for a in self.hub.all()]
        self.runs.heartbeat(ids, self.clock())

    async def maintain(self, interval: float | None = None) -> None:
        """Heartbeat this process's runs and reclaim dead ones, forever (a background task)."""
        period = interval or max(self.lease.total_seconds() / 3, 0.5)
        while True:
            await asyncio.sleep(period)
            try:
                self.heartbeat()
                self.recover()
            except Exception:
                log.exception("maintenance failed")
