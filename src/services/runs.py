"""Use cases that drive runs: send a message, resume, cancel, follow.

A run is owned by the store, not by a process: its row says who executes it, the owner
renews a lease, every checkpoint and the outcome are written only while the row is still
its own, and its events go to the run event log, so any process can follow or cancel it.
The rules are in domain.lifecycle; this process's live runs in services.kernel, its
background work in services.supervisor.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from functools import partial

from domain import lifecycle
from domain.attachments import Upload
from domain.commands import Cancel, SendMessage, StartRun
from domain.errors import (
    ConversationNotFound,
    FiringTaken,
    NoActiveRun,
    NotSupported,
    SessionInProgress,
    ShuttingDown,
    UserLimitReached,
)
from domain.lifecycle import Outcome, StopReason
from domain.model import Conversation, Run, RunStatus, RunTrigger, new_id, title_from_message, utc_now
from domain.models import ChatSettings, ModelChoice, settings_of
from domain.principals import LOCAL, Principal, sees
from domain.queue import QueuedMessage
from domain.schedules import FiringClaim
from ports.engine import AgentEngine, Fork, NewMessage, RunInput
from ports.metrics import NO_METRICS, MetricsPort
from ports.processes import ProcessPort
from ports.runs import LoadCap
from services import admission, following
from services.admission import cap_of
from services.attachments import FileIntake
from services.execution import Execution
from services.follows import Follows
from services.handles import CancelResult, RunStores, RunStream, StartedRun, attach_webhook, webhook_of_command
from services.hub import ActiveRun, RunHub
from services.kernel import KernelDeps, LiveRuns, RunKernel
from services.models import ModelCatalog
from services.pending import PlanPorts, RunRequest, plan_command, plan_input
from services.unsaved import UnsavedOutcomes
from services.usage import UsageMeter

log = logging.getLogger(__name__)

DEFAULT_RECURSION_LIMIT = 25


class RunService(Follows):
    """Starts runs (on this process's kernel), follows and cancels them from any process."""

    def __init__(
        self,
        stores: RunStores,
        engine: AgentEngine,
        processes: ProcessPort,
        hub: RunHub | None = None,
        recursion_limit: int = DEFAULT_RECURSION_LIMIT,
        lease_seconds: float = 30.0,
        cancel_wait: float = 5.0,
        poll_seconds: float = 0.1,
        clock: Callable[[], datetime] = utc_now,
        metrics: MetricsPort = NO_METRICS,
        catalog: ModelCatalog | None = None,
        intake: FileIntake | None = None,
        user_max_active: int = 0,
        unsaved: UnsavedOutcomes | None = None,
        defaults: Callable[[str], Awaitable[ChatSettings]] | None = None,
        quota: UsageMeter | None = None,
    ) -> None:
        self.quota = quota  # USER_DAILY_TOKENS, checked when a run is admitted (None: no quota)
        self.defaults = defaults  # a user's saved default settings (services.presets); None: the server's
        self.unsaved = unsaved or UnsavedOutcomes()  # what reads show for outcomes the store refused
        self.intake = intake  # None: a message with files is refused
        self.user_max_active = user_max_active  # USER_MAX_ACTIVE_RUNS; 0: no limit
        self.catalog = catalog  # None: model names are not checked, no context size is known
        self.stores = stores
        self.checkpoints = stores.checkpoints
        self.engine = engine
        self.processes = processes
        self.cancel_wait = cancel_wait
        limit = recursion_limit if recursion_limit > 0 else DEFAULT_RECURSION_LIMIT
        self.execution = Execution(engine, stores.checkpoints, limit)
        self._plan_ports = PlanPorts(stores.checkpoints, stores.journal, stores.approvals, stores.checker, stores.audit)
        self.deps = KernelDeps(stores, processes, clock, metrics, lease_seconds, poll_seconds, self.unsaved)
        self.kernel = RunKernel(self.deps, self._start_queued, hub)

    @property
    def hub(self) -> LiveRuns:
        """This process's live runs, to read."""
        return self.kernel.live

    @hub.setter
    def hub(self, hub: RunHub) -> None:
        """A hub of one's own (a test's stand-in), before any run starts: a new kernel on it."""
        self.kernel = RunKernel(self.deps, self._start_queued, hub)

    # --- starting -----------------------------------------------------------------------

    async def admit(self, by: Principal) -> None:
        """UserLimitReached when `by` is at USER_MAX_ACTIVE_RUNS (services.admission)."""
        await admission.admit(self.stores.runs, by, self.user_max_active, self.quota)

    async def visible(self, conversation_id: str, by: Principal) -> Conversation:
        """The conversation, when `by` may reach it; ConversationNotFound for an unknown one
        and for another user's (404 alike: no existence leak)."""
        found = await self.stores.runs.get_conversation(conversation_id)
        if found is None or not sees(by, found.owner):
            raise ConversationNotFound()
        return found

    async def start(
        self,
        command: StartRun,
        trigger: RunTrigger = RunTrigger.USER,
        *,
        by: Principal = LOCAL,
        firing: FiringClaim | None = None,
    ) -> StartedRun:
        """Record the run and (for a message) the input, then execute in the background.
        Returns once the input is durable. An Edit or a Regenerate starts the run on a new
        branch. A new conversation belongs to `by`; an existing one must be theirs to reach.
        `firing`: a schedule's firing, claimed in the run's insert (FiringTaken: taken)."""
        if self.kernel.draining:
            raise ShuttingDown()
        change, runs = command.settings, self.stores.runs
        if trigger.limited:
            await self.admit(by)
        if change.sets_model and self.catalog is not None:
            await self.catalog.check(change.model)  # an unknown model: 400, nothing stored
        files = command.files if isinstance(command, SendMessage) else ()
        if command.conversation_id is None:
            assert isinstance(command, SendMessage)  # the only command that may start a conversation
            cid = new_id()
            settings = change.apply(await self.defaults(by.user_id) if self.defaults else ChatSettings())
            files = await self._ready(files, settings)
            title = title_from_message(command.text or (files[0].attachment.name if files else ""))
            await runs.create_conversation(cid, title, self.deps.clock(), settings, owner=by.user_id, temporary=command.temporary)
        else:
            cid = command.conversation_id
            found, latest = await runs.conversation_and_latest_run(cid, self.deps.lease_seconds)
            if found is None or not sees(by, found.owner):
                raise ConversationNotFound()
            await self._refuse_if_active(cid, latest)
            current = settings_of(found)
            settings = change.apply(current)
            files = await self._ready(files, settings)
            if settings != current:
                await runs.set_chat_settings(cid, settings)
        choice = await self._choice(settings)
        run_input, base = await plan_command(self._plan_ports, command, cid, files, self.deps.clock())
        try:
            cap = cap_of(by, self.user_max_active) if trigger.limited else None
            hook = await webhook_of_command(self.stores, command)
            return await self._launch(cid, run_input, base, trigger, choice, cap, firing, hook)
        except (UserLimitReached, FiringTaken):
            if command.conversation_id is None:  # a burst's loser: its new conversation goes too
                await self.stores.runs.delete_conversation(cid)
            raise

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
            return ModelChoice(settings.model, settings.system, system_mode=settings.system_mode)
        return await self.catalog.choice(settings.model, settings.system, settings.system_mode)

    async def _refuse_if_active(self, cid: str, latest: Run | None) -> None:
        if self.kernel.live.get(cid) is not None:
            raise SessionInProgress()
        if latest is not None and latest.status is RunStatus.RUNNING:
            # read before the live runs were: a run of this process may have ended since
            latest = await self.stores.runs.latest_run(cid, self.deps.lease_seconds)
        if latest is not None and latest.status is RunStatus.RUNNING:
            # a row left by a dead or lost owner is reclaimed here rather than blocking the user
            if not await self.kernel.reclaim(latest):
                raise SessionInProgress()

    async def _launch(
        self,
        cid: str,
        run_input: RunInput,
        base: int,
        trigger: RunTrigger,
        choice: ModelChoice | None = None,
        cap: LoadCap | None = None,
        firing: FiringClaim | None = None,
        webhook: str | None = None,
    ) -> StartedRun:
        now = self.deps.clock()
        run = Run(new_id(), cid, RunStatus.RUNNING, now, owner=self.processes.current(), base_count=base, trigger=trigger)
        await attach_webhook(self.stores, run.id, cid, webhook)
        needs_input = isinstance(run_input, (NewMessage, Fork))
        with self.kernel.claim(run):  # recovery may read the row before the run is live
            # raises SessionInProgress if another process won. With an input, nothing is
            # acknowledged before the input's synced commit, which makes the row durable too
            await self.stores.runs.start_run(run, now, flushed_by_input=needs_input, cap=cap, firing=firing)
            body = partial(self.execution, run_input=run_input, choice=choice)
            active = self.kernel.launch(run, body, needs_input=needs_input)
        if active.needs_input:
            await active.input_saved()  # acknowledged means durable: return only once it is committed
        return self._started(active)

    def _started(self, active: ActiveRun) -> StartedRun:
        metrics = self.deps.metrics
        return StartedRun(
            active.conversation_id,
            active.run_id,
            lambda: RunStream(active.run_id, following.counted(active.batches(0), metrics, "local")),
        )

    def _start_queued(self, run: Run, message: QueuedMessage) -> StartedRun:
        return self.launch_queued(run, message)  # looked up on each call: a test may stand in for it

    def launch_queued(self, run: Run, message: QueuedMessage) -> StartedRun:
        """Execute `run`, which the store started for the queued `message` (ports.queue):
        its input is planned as a new message's."""

        async def plan() -> tuple[RunInput, ModelChoice]:
            request = RunRequest(message.text)
            run_input, _ = await plan_input(self._plan_ports, run.conversation_id, request, self.deps.clock())
            # the conversation's model and system prompt as they are when it starts
            found = await self.stores.runs.get_conversation(run.conversation_id)
            settings = settings_of(found) if found is not None else ChatSettings()
            return run_input, await self._choice(settings)

        active = self.kernel.launch(run, partial(self.execution, run_input=plan), needs_input=True)
        log.info("queued message %s started", message.id, extra=active.context)
        return self._started(active)

    # --- stopping ---------------------------------------------------------------------

    async def cancel(self, command: Cancel, *, by: Principal = LOCAL) -> CancelResult:
        """Stop the conversation's running run wherever it executes; it is recorded
        `cancelled`. Waits up to `cancel_wait` seconds for the owner to stop it; a run whose
        owner is dead is finished by the caller itself."""
        cid = command.conversation_id
        await self.visible(cid, by)
        active = self.kernel.live.get(cid)
        if active is not None:
            active.request_stop(StopReason.CANCEL)
            await active.finished.wait()
            outcome = active.outcome
            return CancelResult(cid, active.run_id, outcome.status if outcome else RunStatus.CANCELLED)
        runs = self.stores.runs
        latest = await runs.latest_run(cid, self.deps.lease_seconds)
        if latest is None or latest.status is not RunStatus.RUNNING:
            raise NoActiveRun()
        await self.stores.signals.request_cancel(latest.id)
        if await self.kernel.reclaim(latest, lifecycle.Outcome(RunStatus.CANCELLED)):
            return CancelResult(cid, latest.id, RunStatus.CANCELLED)
        deadline = asyncio.get_running_loop().time() + self.cancel_wait
        while asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(self.deps.poll_seconds)
            run = await runs.get_run(latest.id)
            if run is not None and run.status is not RunStatus.RUNNING:
                return CancelResult(cid, run.id, run.status)
        return CancelResult(cid, latest.id, RunStatus.RUNNING)

    def stop_local(self, run_id: str, reason: StopReason) -> None:
        """Stop run `run_id` if this process executes it (Ctrl-C in `sophos chat`)."""
        self.kernel.stop(run_id, reason)

    async def stop_all(self, reason: StopReason = StopReason.SHUTDOWN) -> None:
        await self.kernel.stop_all(reason)

    async def reclaim(self, run: Run, outcome: Outcome | None = None) -> bool:
        """See RunKernel.reclaim."""
        return await self.kernel.reclaim(run, outcome)
