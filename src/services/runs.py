"""Use cases that drive runs: send a message, resume, cancel, follow.

A run is owned by the store, not by a process: its row says who executes it, the owner
renews a lease, every checkpoint and the outcome are written only while the row is still
its own, and its events go to the run event log, so any process can follow or cancel it.
The rules are in domain.lifecycle; the process's background work in services.supervisor.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import Any

from domain import lifecycle
from domain.approvals import ApprovalRequest
from domain.attachments import Upload
from domain.commands import Cancel, Edit, Regenerate, Resume, SendMessage, StartRun
from domain.errors import (
    ConversationNotFound,
    NoActiveRun,
    NotSupported,
    SessionInProgress,
    ShuttingDown,
    StorageFailure,
    UserLimitReached,
)
from domain.events import (
    AnswerCut,
    ApprovalRequested,
    InputRecorded,
    NodeStarted,
    StreamEvent,
    TokenDelta,
)
from domain.lifecycle import Outcome, StopReason
from domain.model import (
    Conversation,
    Run,
    RunStatus,
    RunTrigger,
    new_id,
    title_from_message,
    utc_now,
)
from domain.models import ChatSettings, ModelChoice
from domain.principals import BOOTSTRAP_ID, LOCAL, Principal, sees
from domain.queue import QueuedMessage
from ports.engine import AgentEngine, Fork, NewMessage, RunInput
from ports.metrics import NO_METRICS, MetricsPort
from ports.processes import ProcessPort
from ports.runs import RunFinish
from services.attachments import FileIntake
from services.following import counted, flatten, follow_conversation, follow_log, follow_queue, iterate
from services.handles import CancelResult, LiveRun, RunStores, StartedRun
from services.hub import ActiveRun, Item, RunHub, RunStream, up_to_terminal
from services.models import ModelCatalog
from services.pending import PlanPorts, RunRequest, plan_fork, plan_input
from services.stream import StreamTranslator, approval_event

log = logging.getLogger(__name__)

DEFAULT_RECURSION_LIMIT = 25


class _Handover(Exception):
    """A steering message waits and the run reached a step boundary."""


class RunService:
    """Starts runs as owned background tasks, records their outcome, follows and cancels
    them from any process."""

    def __init__(
        self,
        stores: RunStores,
        engine: AgentEngine,
        processes: ProcessPort,
        hub: RunHub,
        recursion_limit: int = DEFAULT_RECURSION_LIMIT,
        lease_seconds: float = 30.0,
        cancel_wait: float = 5.0,
        poll_seconds: float = 0.1,
        clock: Callable[[], datetime] = utc_now,
        metrics: MetricsPort = NO_METRICS,
        catalog: ModelCatalog | None = None,
        intake: FileIntake | None = None,
        user_max_active: int = 0,
    ) -> None:
        self.intake = intake  # None: a message with files is refused
        self.user_max_active = user_max_active  # USER_MAX_ACTIVE_RUNS; 0: no limit
        self.catalog = catalog  # None: model names are not checked, no context size is known
        self.stores = stores
        self.runs = stores.runs
        self.checkpoints = stores.checkpoints
        self.engine = engine
        self.processes = processes
        self.hub = hub
        self.recursion_limit = recursion_limit if recursion_limit > 0 else DEFAULT_RECURSION_LIMIT
        self.lease_seconds = lease_seconds
        self.cancel_wait = cancel_wait
        self.poll_seconds = poll_seconds
        self.clock = clock
        self.metrics = metrics
        self.draining = False
        self._unrecorded: dict[str, tuple[ActiveRun, RunFinish]] = {}  # outcomes the store refused
        self.starting: set[str] = set()  # recorded, not yet in the hub: executed here all the same
        # conversations whose queued message this process is starting: the run's id is the
        # message's, known once the store has claimed it (ports.queue.start_queued)
        self.claiming: set[str] = set()
        self.queue = stores.queue

    # --- starting -----------------------------------------------------------------------

    async def admit(self, by: Principal) -> None:
        """UserLimitReached when `by` already has USER_MAX_ACTIVE_RUNS runs going or messages
        queued. The bootstrap admin (API_TOKEN, this machine's commands) is the operator and
        is not limited. Checked on admission: requests racing each other may pass it together."""
        if self.user_max_active and by.user_id != BOOTSTRAP_ID:
            if await self.runs.owner_load(by.user_id) >= self.user_max_active:
                raise UserLimitReached()

    async def visible(self, conversation_id: str, by: Principal) -> Conversation:
        """The conversation, when `by` may reach it; ConversationNotFound for an unknown one
        and for another user's (404 alike: no existence leak)."""
        found = await self.runs.get_conversation(conversation_id)
        if found is None or not sees(by, found.owner):
            raise ConversationNotFound()
        return found

    async def start(
        self, command: StartRun, trigger: RunTrigger = RunTrigger.USER, *, by: Principal = LOCAL
    ) -> StartedRun:
        """Record the run and (for a message) the input, then execute in the background.
        Returns once the input is durable. An Edit or a Regenerate starts the run on a new
        branch. A new conversation belongs to `by`; an existing one must be theirs to reach."""
        if self.draining:
            raise ShuttingDown()
        change = command.settings
        if trigger is RunTrigger.USER:
            await self.admit(by)
        if change.sets_model and self.catalog is not None:
            await self.catalog.check(change.model)  # an unknown model: 400, nothing stored
        files = command.files if isinstance(command, SendMessage) else ()
        if command.conversation_id is None:
            assert isinstance(command, SendMessage)  # the only command that may start a conversation
            cid = new_id()
            settings = change.apply(ChatSettings())
            files = await self._ready(files, settings)
            title = title_from_message(command.text or (files[0].attachment.name if files else ""))
            await self.runs.create_conversation(cid, title, self.clock(), settings, owner=by.user_id)
        else:
            cid = command.conversation_id
            found, latest = await self.runs.conversation_and_latest_run(cid, self.lease_seconds)
            if found is None or not sees(by, found.owner):
                raise ConversationNotFound()
            await self._refuse_if_active(cid, latest)
            current = ChatSettings(found.model, found.system)
            settings = change.apply(current)
            files = await self._ready(files, settings)
            if settings != current:
                await self.runs.set_chat_settings(cid, settings)
        choice = await self._choice(settings)
        s = self.stores
        ports = PlanPorts(s.checkpoints, s.journal, s.approvals, s.checker)
        if isinstance(command, Edit):
            run_input, base = await plan_fork(ports, cid, command.text, command.index)
        elif isinstance(command, Regenerate):
            run_input, base = await plan_fork(ports, cid, "", None)
        else:
            if isinstance(command, Resume):
                request = RunRequest("", True, command.decision, command.decisions)
            else:
                request = RunRequest(command.text.strip(), files=files)
            new_thread = command.conversation_id is None
            run_input, base = await plan_input(ports, cid, request, self.clock(), new_thread=new_thread)
        return await self._launch(cid, run_input, base, trigger, choice)

    async def _ready(self, files: tuple[Upload, ...], settings: ChatSettings) -> tuple[Upload, ...]:
        """The message's files with their text, before anything is stored (a file the
        model cannot take is refused here)."""
        if not files:
            return files
        if self.intake is None:
            raise NotSupported("This server does not take attachments")
        return await self.intake.prepare(files, settings.model)

    async def _choice(self, settings: ChatSettings) -> ModelChoice:
        if self.catalog is None:
            return ModelChoice(settings.model, settings.system)
        return await self.catalog.choice(settings.model, settings.system)

    async def _refuse_if_active(self, cid: str, latest: Run | None) -> None:
        if self.hub.get(cid) is not None:
            raise SessionInProgress()
        if latest is not None and latest.status is RunStatus.RUNNING:
            # read before the hub was checked: a run of this process may have ended since
            latest = await self.runs.latest_run(cid, self.lease_seconds)
        if latest is not None and latest.status is RunStatus.RUNNING:
            # a row left by a dead or lost owner is reclaimed here rather than blocking the user
            if not await self.reclaim(latest):
                raise SessionInProgress()

    async def _launch(
        self, cid: str, run_input: RunInput, base: int, trigger: RunTrigger, choice: ModelChoice | None = None
    ) -> StartedRun:
        now = self.clock()
        run = Run(new_id(), cid, RunStatus.RUNNING, now, owner=self.processes.current(), base_count=base, trigger=trigger)
        self.starting.add(run.id)  # recovery may read the row before this task adds the run to the hub
        needs_input = isinstance(run_input, (NewMessage, Fork))
        try:
            # raises SessionInProgress if another process won. With an input, nothing is
            # acknowledged before the input's synced commit, which makes the row durable too
            await self.runs.start_run(run, now, flushed_by_input=needs_input)
        finally:
            self.starting.discard(run.id)
        active = self._begin(run, needs_input, partial(self._execute, run_input=run_input, choice=choice))
        if active.needs_input:
            # acknowledged means durable: return only once the message is committed
            recorded = asyncio.ensure_future(active.input_recorded.wait())
            ended = asyncio.ensure_future(active.finished.wait())
            await asyncio.wait({recorded, ended}, return_when=asyncio.FIRST_COMPLETED)
            recorded.cancel()
            ended.cancel()
            if not active.input_recorded.is_set():
                failure = active.failure
                raise failure if isinstance(failure, Exception) else StorageFailure(
                    "The run stopped before its message was saved"
                )
        return self._started(active)

    def _started(self, active: ActiveRun) -> StartedRun:
        return StartedRun(
            active.conversation_id, active.run_id,
            lambda: RunStream(active.run_id, counted(active.batches(0), self.metrics, "local")),
        )

    def _begin(self, run: Run, needs_input: bool, body: Callable[[ActiveRun], Coroutine[Any, Any, None]]) -> ActiveRun:
        """Execute a recorded run here: in the hub (replacing the run it follows), as a task."""
        cid = run.conversation_id
        active = ActiveRun(run.id, cid, run.base_count, needs_input=needs_input, history=partial(self.stores.events.read, run.id))
        self.hub.add(active)
        self.metrics.run_started(run.trigger.value)
        log.info("run started (%s)", run.trigger.value, extra=active.context)
        active.task = asyncio.create_task(body(active), name=f"run-{run.id}")
        return active

    def claimed_run(self, run: Run, message: QueuedMessage) -> Run:
        """`run` as the store started it for `message`: with the id the store gave it."""
        self.claiming.discard(run.conversation_id)
        return replace(run, id=message.run_id or run.id)

    def launch_queued(self, run: Run, message: QueuedMessage) -> StartedRun:
        """Execute `run`, which the store started for the queued `message` (ports.queue):
        its input is planned as a new message's."""
        s = self.stores
        ports = PlanPorts(s.checkpoints, s.journal, s.approvals, s.checker)

        async def plan() -> tuple[RunInput, ModelChoice]:
            run_input, _ = await plan_input(ports, run.conversation_id, RunRequest(message.text), self.clock())
            # the conversation's model and system prompt as they are when it starts
            found = await self.runs.get_conversation(run.conversation_id)
            settings = ChatSettings(found.model, found.system) if found is not None else ChatSettings()
            return run_input, await self._choice(settings)

        try:
            active = self._begin(run, True, partial(self._execute, run_input=plan))
        finally:
            self.starting.discard(run.id)
        log.info("queued message %s started", message.id, extra=active.context)
        return self._started(active)

    # --- executing ----------------------------------------------------------------------

    async def _execute(
        self,
        active: ActiveRun,
        run_input: RunInput | Callable[[], Awaitable[tuple[RunInput, ModelChoice]]],
        choice: ModelChoice | None = None,
    ) -> None:
        active.started = True
        translator = StreamTranslator()
        failure: BaseException | None = None
        streamed: list[str] = []  # the text of the current step, kept if a person stops it
        asked: list[ApprovalRequest] = []  # calls of the step that wait for a person
        cut = False  # an answer reached MODEL_MAX_TOKENS (its text is stored)
        try:
            if active.stop_reason is not None and not active.needs_input:
                raise asyncio.CancelledError  # stopped before its first step
            if callable(run_input):  # a queued message: planned here, its run already recorded
                run_input, choice = await run_input()
            events = self.engine.run(active.conversation_id, active.run_id, run_input, self.recursion_limit, choice)
            async with contextlib.aclosing(events):
                async for event in events:
                    if isinstance(event, InputRecorded):
                        active.input_recorded.set()
                        if active.stop_reason is not None:
                            raise asyncio.CancelledError  # a stop that waited for the input
                        continue
                    if isinstance(event, ApprovalRequested):
                        asked.append(event.request)
                    elif isinstance(event, NodeStarted):
                        streamed.clear()
                        if event.node == "agent" and active.steer_requested:
                            # a step boundary: the tools step before it is committed, every
                            # call answered; the step just begun is cut at its start and
                            # nothing of it is saved
                            raise _Handover
                    elif isinstance(event, TokenDelta):
                        streamed.append(event.text)
                    elif isinstance(event, AnswerCut):
                        cut = True
                    for out in translator.feed(event):
                        active.publish(out)
        except _Handover:
            active.stop_reason = active.stop_reason or StopReason.STEER
            log.info("run hands over to a steering message", extra=active.context)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            if active.stop_reason is None:
                active.stop_reason = StopReason.SHUTDOWN
        except Exception as e:  # every failure becomes data on the run, never a crash
            failure = e
        if streamed and (active.stop_reason is not None or failure is not None):
            failure = await self._keep_stopped_text(active, "".join(streamed), failure) or failure
        active.finishing = True
        active.failure = failure
        outcome = lifecycle.outcome_of(failure, active.stop_reason, waiting=bool(asked), cut=cut)
        for out in translator.close():
            active.publish(out)
        if outcome.status is RunStatus.WAITING:
            active.publish(approval_event(active.conversation_id, active.run_id, asked))
            log.info("run waits for approval of %d tool call(s)", len(asked), extra=active.context)
        await self._finish(active, outcome)

    async def _keep_stopped_text(self, active: ActiveRun, text: str, failure: BaseException | None) -> BaseException | None:
        """The answer a person stopped, or the model failed in, stays in the thread; a
        store that refuses it turns the outcome into that failure (RunLost: the run is no
        longer ours)."""
        try:
            head = await self.checkpoints.head(active.conversation_id)
            if lifecycle.keeps_stopped_text(active.stop_reason, text, head, failure):
                await self.engine.keep_stopped_text(active.conversation_id, active.run_id, text)
        except Exception as e:
            log.warning("could not keep the stopped answer: %s", e, extra=active.context)
            return e
        return None

    async def _finish(self, active: ActiveRun, outcome: Outcome) -> None:
        ctx = active.context
        if outcome.error is not None and outcome.status is RunStatus.FAILED:
            code = outcome.error.code
            log.warning("run failed: %s %s", code, outcome.error.message, extra=ctx,
                        exc_info=active.failure if code == "AGENT_FAILURE" else None)
        active.outcome = outcome
        event = lifecycle.terminal_event(active.conversation_id, outcome)
        if outcome.recorded:
            finish = RunFinish(outcome.status, self.clock(), outcome.error, None, event, active.next_id)
            await self._record(active, finish)
        else:
            log.warning("run lost to another process; this process wrote nothing more", extra=ctx)
        active.publish(event, durable=False)
        self.hub.remove(active)
        status = outcome.status.value if outcome.recorded else "lost"
        self.metrics.run_finished(status, outcome.error.code if outcome.error else None, time.monotonic() - active.began)
        log.info("run finished: %s", outcome.status.value, extra=ctx)

    async def _record(self, active: ActiveRun, finish: RunFinish) -> bool:
        """Flush the run's events and write its outcome (fenced by ownership). A store that
        refuses keeps the outcome for the supervisor to retry with its real code."""
        items = active.take_unflushed()  # written with the outcome, in its transaction
        try:
            if finish.status is RunStatus.COMPLETED:  # every write of the run was awaited
                count = await self.checkpoints.count_written(active.conversation_id, active.run_id)
            else:
                count = (await self.checkpoints.head(active.conversation_id)).message_count
            finish = RunFinish(finish.status, finish.now, finish.error, count, finish.event, finish.event_id)
            then = self._next_run(active, finish)
            recorded = replace(finish, events=tuple(items), then=then,
                               input_recorded=active.input_recorded.is_set() or not active.needs_input)
            if then is not None:
                self.starting.add(then.id)  # executed here once recorded: recovery must leave it
                self.claiming.add(active.conversation_id)  # ... under the queued message's id
            try:
                written = await self.runs.finish_run(active.run_id, recorded, owner=self.processes.current())
            except BaseException:
                if then is not None:
                    self.starting.discard(then.id)
                    self.claiming.discard(active.conversation_id)
                raise
        except Exception:
            active.unflushed[:0] = items  # for the retry
            log.exception("could not record the outcome of the run; will retry", extra=active.context)
            self._unrecorded[active.run_id] = (active, finish)
            return False
        self._unrecorded.pop(active.run_id, None)
        if then is not None:
            self.starting.discard(then.id)
            if isinstance(written, QueuedMessage):
                self.launch_queued(self.claimed_run(then, written), written)
            self.claiming.discard(active.conversation_id)  # nothing was queued: no run was started
        if not written:
            log.warning("the outcome was not recorded: the run is no longer this process's", extra=active.context)
        return True

    def _next_run(self, active: ActiveRun, finish: RunFinish) -> Run | None:
        """The run the store starts for the next queued message if this one completed."""
        if self.queue is None or finish.status is not RunStatus.COMPLETED or self.draining:
            return None
        base = (finish.message_count or 0) + 1  # the queued message is its first
        owner = self.processes.current()
        return Run(new_id(), active.conversation_id, RunStatus.RUNNING, self.clock(), owner=owner, base_count=base,
                   trigger=RunTrigger.QUEUE)

    async def retry_unrecorded(self) -> None:
        """Write again the outcomes the store refused earlier (see `_record`)."""
        for active, finish in list(self._unrecorded.values()):
            await self._record(active, finish)

    def refuse_new_runs(self) -> None:
        """From now on `start` raises ShuttingDown (a drain has begun)."""
        self.draining = True

    # --- following, stopping ------------------------------------------------------------

    async def live_run(self, conversation_id: str) -> LiveRun | None:
        """The conversation's running run, wherever it executes."""
        active = self.hub.get(conversation_id)
        if active is not None:
            return LiveRun(active.run_id, active.base_count)
        latest = await self.runs.latest_run(conversation_id)
        if latest is not None and latest.status is RunStatus.RUNNING:
            return LiveRun(latest.id, latest.base_count)
        return None

    async def is_active(self, conversation_id: str) -> bool:
        return await self.live_run(conversation_id) is not None

    async def follow(
        self, conversation_id: str, after: int, tag: str | None = None, through_queue: bool = False
    ) -> AsyncGenerator[Item, None] | StreamEvent:
        """The events of the conversation's live run after id `after` (ending with its
        terminal event), from this process's memory or from the run event log; or, when no
        run is live, the durable answer (a single event without an id). `tag` names the run
        `after` belongs to (None: the contract's bare number, taken as this run's); an id
        of another run replays this one from the start."""
        answer = await self.follow_batches(conversation_id, after, tag, through_queue)
        return answer if isinstance(answer, StreamEvent) else flatten(answer)

    async def follow_batches(
        self, conversation_id: str, after: int, tag: str | None = None, through_queue: bool = False, *,
        by: Principal = LOCAL,
    ) -> RunStream | StreamEvent:
        """As `follow`, with the events that were ready together in one batch;
        `through_queue`: on into the runs that follow (services.following.follow_queue).
        Another user's conversation answers as an unknown one."""
        if not by.sees_all:
            found = await self.runs.get_conversation(conversation_id)
            if found is None or not sees(by, found.owner):
                data = {"code": "NOT_FOUND", "message": "Conversation Not Found", "conversation": conversation_id}
                return StreamEvent("chat-error", data)
        if through_queue:
            return await follow_queue(self, conversation_id, after, tag)
        return await follow_conversation(self, conversation_id, after, tag)

    async def follow_run(self, run: Run, after: int) -> RunStream:
        """The events of `run` after id `after`, up to its terminal event: live from this
        process, through the event log while another process executes it, else replayed
        from the log (a terminal event built from the row when the log no longer has one)."""
        active = self.hub.by_run(run.id)
        if active is not None:
            return RunStream(run.id, counted(active.batches(after), self.metrics, "local"))
        current = await self.runs.get_run(run.id) or run
        if current.status is RunStatus.RUNNING:
            return RunStream(run.id, counted(follow_log(self, current, after), self.metrics, "log"))
        items, done = up_to_terminal(list(await self.stores.events.read(run.id, after)))
        if not done:
            outcome = Outcome(current.status, current.error)
            items.append((items[-1][0] + 1 if items else after + 1, lifecycle.terminal_event(run.conversation_id, outcome)))
        return RunStream(run.id, iterate(items))

    async def cancel(self, command: Cancel, *, by: Principal = LOCAL) -> CancelResult:
        """Stop the conversation's running run wherever it executes; it is recorded
        `cancelled`. Waits up to `cancel_wait` seconds for the owner to stop it; a run whose
        owner is dead is finished by the caller itself."""
        cid = command.conversation_id
        await self.visible(cid, by)
        active = self.hub.get(cid)
        if active is not None:
            active.request_stop(StopReason.CANCEL)
            await active.finished.wait()
            outcome = active.outcome
            return CancelResult(cid, active.run_id, outcome.status if outcome else RunStatus.CANCELLED)
        latest = await self.runs.latest_run(cid, self.lease_seconds)
        if latest is None or latest.status is not RunStatus.RUNNING:
            raise NoActiveRun()
        await self.stores.signals.request_cancel(latest.id)
        if await self.reclaim(latest, lifecycle.Outcome(RunStatus.CANCELLED)):
            return CancelResult(cid, latest.id, RunStatus.CANCELLED)
        deadline = asyncio.get_running_loop().time() + self.cancel_wait
        while asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(self.poll_seconds)
            run = await self.runs.get_run(latest.id)
            if run is not None and run.status is not RunStatus.RUNNING:
                return CancelResult(cid, run.id, run.status)
        return CancelResult(cid, latest.id, RunStatus.RUNNING)

    def stop_local(self, run_id: str, reason: StopReason) -> None:
        active = self.hub.by_run(run_id)
        if active is not None:
            active.request_stop(reason)

    async def stop_all(self, reason: StopReason = StopReason.SHUTDOWN) -> None:
        runs = self.hub.all()
        for active in runs:
            active.request_stop(reason)
        await asyncio.gather(*(a.finished.wait() for a in runs))

    # --- reclaiming ---------------------------------------------------------------------

    async def reclaim(self, run: Run, outcome: Outcome | None = None) -> bool:
        """Record a `running` run that nobody executes any more as stopped (the verdict of
        its thread, or `outcome`), with its terminal event. Never touches a live run: the
        write is a compare-and-set on the heartbeat the caller read."""
        here = (
            self.hub.by_run(run.id) is not None
            or run.id in self.starting
            or (run.trigger is RunTrigger.QUEUE and run.conversation_id in self.claiming)
        )
        alive = self.processes.is_alive(run.owner) if run.owner else None
        if not lifecycle.reclaimable(run, self.processes.current(), here, alive):
            return False
        mine = self._unrecorded.get(run.id)
        if mine is not None:  # our own outcome, refused by the store earlier: its real code
            return await self._record(*mine)
        head = await self.checkpoints.head(run.conversation_id)
        verdict = outcome or lifecycle.recovery_verdict(run, head)
        event = lifecycle.terminal_event(run.conversation_id, verdict)
        # a queued message this run took in goes back to the queue unless the thread has it
        recorded = lifecycle.input_saved(run, head)
        finish = RunFinish(verdict.status, self.clock(), verdict.error, head.message_count, event, input_recorded=recorded)
        changed = bool(await self.runs.finish_run(run.id, finish, heartbeat=run.heartbeat_at))  # no `then`: True or False
        if changed:
            self.metrics.run_reclaimed(verdict.status.value)
            ctx = {"conversation_id": run.conversation_id, "run_id": run.id}
            log.info("reclaimed run as %s", verdict.status.value, extra=ctx)
        return changed

