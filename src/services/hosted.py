"""Runs of hosted graphs (issue 44), as Sophos runs: the same run row (admission, one active
run per thread, leases and fencing), launched by the run kernel, its chunks in the run's
events (domain.hosted.GraphChunk), so a join, a re-join and another process's join work as
for Sophos's own agent; a run stopped by a crash is resumed with its own graph from the
thread's last checkpoint.

Outcomes: the graph ends (completed), an `interrupt()` or interrupt_before/after leaves work
(waiting: the thread is `interrupted`), it raises (failed: the exception as LangGraph's
`error` chunk), a person cancels (cancelled), the process stops (interrupted)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from domain import lifecycle
from domain.audit import Action
from domain.commands import Cancel, Resume, StartRun
from domain.crons import GraphInput, OnCompleted
from domain.errors import (
    ConversationNotFound,
    ErrorCode,
    NoActiveRun,
    RunLost,
    RunNotResumable,
    SessionInProgress,
    ShuttingDown,
    SophosError,
)
from domain.graphs import assistant_id_of
from domain.hosted import THREAD_GRAPH_KEY, GraphChunk, GraphRun, GraphState
from domain.lifecycle import Outcome, StopReason
from domain.model import NEW_CONVERSATION_TITLE, Conversation, Run, RunStatus, RunTrigger, new_id
from domain.models import ChatSettings
from domain.principals import LOCAL, Principal
from domain.schedules import FiringClaim
from ports.checkpoints import CheckpointPort
from ports.graphs import GraphCatalog, GraphRunner
from services import following
from services.admission import cap_of
from services.handles import CancelResult, RunStream, StartedRun
from services.hub import ActiveRun
from services.kernel import RunKernel
from services.runs import RunService

if TYPE_CHECKING:  # imported only when tracing is on (entrypoints/factories.py)
    from services.traces import RunTracer

log = logging.getLogger(__name__)

ENDED = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)  # a run that waits keeps its thread


class HostedRuns:
    """Starts, resumes and reads the runs of the catalog's graphs on `runs`' kernel."""

    def __init__(
        self,
        runs: RunService,
        runner: Callable[[], GraphRunner],
        catalog: Callable[[], GraphCatalog],
        checkpoints: Callable[[], CheckpointPort] | None = None,
        tracer: RunTracer | None = None,
    ) -> None:
        self.runs = runs
        self.tracer = tracer  # an invoke_agent span per run (None: tracing off)
        self._runner = runner  # made on first use: a process that hosts nothing never imports LangGraph for it
        self._catalog = catalog
        self._checkpoints = checkpoints  # a thread's checkpoints, deleted with a cron's firing thread
        self.ephemeral: set[str] = set()  # runs of this process whose thread goes when they end (GraphRun.delete_thread)
        self._tasks: set[asyncio.Task[None]] = set()
        runs.kernel.live.when_ended(self.run_ended)

    @property
    def runner(self) -> GraphRunner:
        return self._runner()

    @property
    def catalog(self) -> GraphCatalog:
        return self._catalog()

    @property
    def kernel(self) -> RunKernel:
        return self.runs.kernel

    def hosts(self, graph_id: str) -> bool:
        return any(g.graph_id == graph_id for g in self.catalog.graphs())

    async def start(
        self,
        run: GraphRun,
        trigger: RunTrigger = RunTrigger.USER,
        *,
        by: Principal = LOCAL,
        firing: FiringClaim | None = None,
    ) -> StartedRun:
        """Record the run (refused while the thread has one running, or `by` is at
        USER_MAX_ACTIVE_RUNS) and execute it here in the background. The thread must exist
        and be `by`'s; it records the graph (thread metadata `graph_id` and `assistant_id`).
        `firing`: a schedule's firing, claimed in the run's insert (FiringTaken: taken)."""
        kernel, stores, deps = self.kernel, self.runs.stores, self.runs.deps
        if kernel.draining:
            raise ShuttingDown()
        self.catalog.get(run.graph_id)  # GraphNotFound before anything is stored
        thread = await self.runs.visible(run.thread_id, by)
        if run.checkpoint_id is not None:
            await self.state(run.graph_id, run.thread_id, run.checkpoint_id)  # 404 for an unknown one
        if trigger.limited:
            await self.runs.admit(by)
        await self._refuse_if_active(run.thread_id)
        now = deps.clock()
        row = Run(
            new_id(),
            run.thread_id,
            RunStatus.RUNNING,
            now,
            owner=deps.processes.current(),
            base_count=0,  # no messages of Sophos's: the thread's state is the graph's
            trigger=trigger,
        )
        cap = cap_of(by, self.runs.user_max_active) if trigger.limited else None
        # kept before the row exists: a crash right after it leaves a run whose graph is known
        # (adoption resumes it with that graph, never with Sophos's agent)
        await stores.runs.set_run_kwargs(row.conversation_id, row.id, run.kept())
        await stores.runs.merge_thread_metadata(row.conversation_id, _stamp(run.graph_id, run.assistant_id))
        with kernel.claim(row):
            await stores.runs.start_run(row, now, cap=cap, firing=firing)

            async def body(active: ActiveRun) -> Outcome:
                return await self._execute(active, run, thread.owner)

            active = kernel.launch(row, body, needs_input=False)
            if run.delete_thread:  # before the run can end: it runs once this returns
                self.ephemeral.add(row.id)
        metrics = deps.metrics
        return StartedRun(
            row.conversation_id,
            row.id,
            lambda: RunStream(active.run_id, following.counted(active.batches(0), metrics, "local")),
        )

    async def fire(
        self, graph: GraphInput, thread_id: str | None, firing: FiringClaim, *, by: Principal, webhook: str | None = None
    ) -> StartedRun:
        """Start a schedule's firing of a hosted graph (services.scheduler) on `thread_id`,
        or on a new thread of `by`'s (None: a cron without a thread), which goes again when
        the firing was taken meanwhile. A new thread's run ends by deleting it when the
        cron says so (`on_run_completed` delete)."""
        fresh = thread_id is None
        cid = thread_id or new_id()
        if fresh:
            settings = await self.runs.defaults(by.user_id) if self.runs.defaults is not None else ChatSettings()
            await self.runs.stores.runs.create_conversation(
                cid, NEW_CONVERSATION_TITLE, self.runs.deps.clock(), settings, owner=by.user_id
            )
        run = replace(graph.run(cid), delete_thread=fresh and graph.on_completed is not OnCompleted.KEEP, webhook=webhook)
        try:
            return await self.start(run, RunTrigger.SCHEDULE, by=by, firing=firing)
        except BaseException:
            if fresh:
                await self.runs.stores.runs.delete_conversation(cid)
            raise

    def run_ended(self, active: ActiveRun) -> None:
        """A run of this process ended: a cron's firing thread whose run came to an end
        (not one that waits for an answer, nor one a shutdown stopped) is deleted, off the
        run's path (services.hub.when_ended: a listener never blocks)."""
        if active.run_id not in self.ephemeral:
            return
        self.ephemeral.discard(active.run_id)
        outcome = active.outcome
        if outcome is None or not outcome.recorded or outcome.status not in ENDED:
            return  # waits, stopped, or taken over by another process (which ends it)
        task = asyncio.create_task(self._forget(active.conversation_id), name=f"forget-{active.run_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _forget(self, cid: str) -> None:
        try:
            if self._checkpoints is not None:
                await self._checkpoints().delete_thread(cid)
            await self.runs.stores.runs.delete_conversation(cid)
        except SophosError as e:
            log.warning("a cron's thread was not deleted: %s", e.message, extra={"conversation_id": cid})
            return
        log.info("a cron's thread deleted after its run (on_run_completed delete)", extra={"conversation_id": cid})

    async def _refuse_if_active(self, cid: str) -> None:
        if self.kernel.live.get(cid) is not None:
            raise SessionInProgress()
        latest = await self.runs.stores.runs.latest_run(cid, self.runs.deps.lease_seconds)
        if latest is not None and latest.status is RunStatus.RUNNING and not await self.kernel.reclaim(latest):
            raise SessionInProgress()  # a live owner's (a dead owner's row is reclaimed here)

    async def kept(self, cid: str) -> dict[str, Any] | None:
        """What the thread's latest run kept (GraphRun.kept) when it ran a hosted graph
        (served or no longer); None for Sophos's own agent's."""
        latest = await self.runs.stores.runs.latest_run(cid)
        if latest is None:
            return None
        kept = await self.runs.stores.runs.run_kwargs(cid, latest.id)
        return dict(kept) if kept is not None and isinstance(kept.get("graph_id"), str) else None

    async def roll_back(self, run: GraphRun, *, by: Principal = LOCAL) -> StartedRun:
        """Cancel the thread's run going and start `run` from the checkpoint that run began
        at (multitask_strategy rollback): the thread's state is as before the cancelled run,
        whose checkpoints stay in its history as a fork, never deleted."""
        cid = run.thread_id
        latest = await self.runs.stores.runs.latest_run(cid)
        with contextlib.suppress(NoActiveRun):  # it ended meanwhile: rolled back all the same
            await self.runs.cancel(Cancel(cid), by=by)
        if latest is not None and run.checkpoint_id is None:
            began = await self.runner.began_at(run.graph_id, cid, latest.id)
            run = replace(run, checkpoint_id=began)
        return await self.start(run, by=by)

    async def resume(self, cid: str, trigger: RunTrigger = RunTrigger.USER, *, by: Principal = LOCAL) -> StartedRun:
        """Resume the thread's stopped hosted run (a crash, a drain) with its own graph,
        config and modes, from the last checkpoint (no input). RunNotResumable when the
        thread's latest run is no hosted graph's."""
        kept = await self.kept(cid)
        if kept is None:
            raise RunNotResumable("The thread's last run is not a hosted graph's")
        if not self.hosts(kept["graph_id"]):  # never Sophos's agent on a graph's thread
            raise RunNotResumable(f"The thread's graph {kept['graph_id'][:128]!r} is not served (LANGGRAPH_JSON)")
        return await self.start(await self._again(cid, kept), trigger, by=by)

    async def _again(self, cid: str, kept: dict[str, Any]) -> GraphRun:
        """The stopped run once more: from the thread's last checkpoint when that is the run's
        own (it wrote one), else as it was asked (GraphRun.restarted): nothing of it reached
        the thread, not even its input or its answer to an interrupt."""
        latest = await self.runs.stores.runs.latest_run(cid)
        head = await self.runs.stores.checkpoints.head(cid)
        if latest is not None and head.run_id != latest.id:
            return GraphRun.restarted(cid, kept)
        return GraphRun.resumed(cid, kept)

    def follow_from(
        self, first: Run | StartedRun, after: int = 0, *, by: Principal = LOCAL, resume: bool = True
    ) -> AsyncGenerator[RunStream, None]:
        """The runs a client follows from `first` on (services.following.follow_from): a run
        a crash stopped is followed by the run that resumed it, else (with `resume`) by a
        resume of its graph started here as `by`."""
        resumer = partial(self.resume, by=by) if resume else None
        return following.follow_from(self.kernel, first, after, resume=resumer)

    async def _execute(self, active: ActiveRun, run: GraphRun, owner: str | None = None) -> Outcome:
        """The run's body (services.kernel.Body): stream the graph's chunks into the run's
        events until it ends, whatever ends it, and the outcome it comes to."""
        active.started = True
        active.follow_up = False  # no turn count, no model title: the state is the graph's
        failure: BaseException | None = None
        try:
            if active.stop_reason is not None:
                raise asyncio.CancelledError  # stopped before its first step
            if self.tracer is not None:  # the graph's own calls are not seen: the run's span only
                resumed = run.input is None and run.command is None
                await self.tracer.hosted_run(active.run_id, run.thread_id, run.graph_id, resumed)
            async with contextlib.aclosing(self.runner.stream(run, active.run_id, owner)) as chunks:
                async for chunk in chunks:
                    active.publish(chunk.event())
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            active.stop_reason = active.stop_reason or StopReason.SHUTDOWN
        except Exception as e:  # the graph's failure is data on the run, never a crash
            failure = e
        active.finishing = True
        waiting = False
        if failure is None and active.stop_reason is None:
            try:
                waiting = (await self.runner.state(run.graph_id, run.thread_id)).waiting
            except Exception as e:
                failure = e
        active.failure = failure
        if failure is not None and not isinstance(failure, RunLost):
            active.publish(GraphChunk("error", {"error": type(failure).__name__, "message": str(failure)}).event())
        return lifecycle.outcome_of(failure, active.stop_reason, waiting=waiting)

    async def state(self, graph_id: str, cid: str, checkpoint_id: str | None = None, *, subgraphs: bool = False) -> GraphState:
        """The thread's state (at `checkpoint_id`); ConversationNotFound for a checkpoint
        the thread does not have."""
        state = await self.runner.state(graph_id, cid, checkpoint_id, subgraphs=subgraphs)
        if checkpoint_id is not None and state.checkpoint is None:
            raise ConversationNotFound("Checkpoint Not Found")
        return state

    async def update_state(
        self, graph_id: str, cid: str, values: Any, *, as_node: str | None, checkpoint_id: str | None, by: Principal = LOCAL
    ) -> str:
        """Write `values` into the thread as `as_node` (POST /threads/{id}/state); refused
        while a run runs (its writes are the run's), as langgraph-api refuses it."""
        await self.runs.visible(cid, by)
        await self._refuse_if_active(cid)
        written = await self.runner.update_state(graph_id, cid, values, as_node=as_node, checkpoint_id=checkpoint_id)
        kept = await self.kept(cid)  # the thread keeps the assistant its runs use
        assistant = kept.get("assistant_id") if kept is not None and kept.get("graph_id") == graph_id else None
        await self.runs.stores.runs.merge_thread_metadata(cid, _stamp(graph_id, assistant))
        await self.runs.stores.audit.record(Action.STATE_UPDATED, cid, f"{graph_id} as {as_node or '(last node)'}: {written}")
        return written


def _stamp(graph_id: str, assistant_id: str | None = None) -> dict[str, str]:
    """What a thread that runs `graph_id` (with assistant `assistant_id`, None: the graph's
    start-up one) carries in its metadata, as langgraph-api stamps it (clients filter threads by it)."""
    return {THREAD_GRAPH_KEY: graph_id, "assistant_id": assistant_id or assistant_id_of(graph_id)}


class GraphAwareRuns:
    """The run use cases the supervisor and the queue drive (services.kernel.RunUseCases),
    with a resume of a hosted graph's thread going to its graph: adoption after a crash
    (AUTO_RESUME) resumes a hosted run with its own graph, Sophos's agent runs the rest."""

    def __init__(self, runs: RunService, hosted: HostedRuns) -> None:
        self._runs = runs
        self._hosted = hosted

    @property
    def kernel(self) -> RunKernel:
        return self._runs.kernel

    async def start(self, command: StartRun, trigger: RunTrigger = RunTrigger.USER, *, by: Principal = LOCAL) -> StartedRun:
        cid = command.conversation_id
        if isinstance(command, Resume) and cid is not None and not command.decisions and await self._hosted.kept(cid):
            return await self._hosted.resume(cid, trigger, by=by)
        return await self._runs.start(command, trigger, by=by)

    async def cancel(self, command: Cancel, *, by: Principal = LOCAL) -> CancelResult:
        return await self._runs.cancel(command, by=by)

    async def restartable(self, run: Run) -> bool:
        """A hosted graph's run that a crash cut before anything of it reached its thread
        (INPUT_NOT_RECORDED) starts again: its input is kept with it, as langgraph-api keeps
        a run's. Sophos's agent's waits for its client to send the message again."""
        return run.error_code == ErrorCode.INPUT_NOT_RECORDED.value and await self._hosted.kept(run.conversation_id) is not None

    async def visible(self, conversation_id: str, by: Principal) -> Conversation:
        return await self._runs.visible(conversation_id, by)

    async def admit(self, by: Principal) -> None:
        await self._runs.admit(by)
