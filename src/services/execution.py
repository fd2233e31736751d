"""One run's execution: the engine's events into the run's stream, and the outcome they
come to (domain.lifecycle decides it). The kernel (services.kernel) launches it as the
run's task and records the outcome."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from domain import lifecycle
from domain.approvals import ApprovalRequest
from domain.events import (
    AnswerCut,
    ApprovalRequested,
    InputRecorded,
    NodeStarted,
    TokenDelta,
)
from domain.lifecycle import Outcome, StopReason
from domain.model import RunStatus
from domain.models import ModelChoice
from ports.checkpoints import CheckpointPort
from ports.engine import AgentEngine, RunInput
from services.hub import ActiveRun
from services.stream import StreamTranslator, approval_event

log = logging.getLogger(__name__)

# a queued message's input, planned when its run starts (its run is already recorded)
Plan = Callable[[], Awaitable[tuple[RunInput, ModelChoice]]]


class _Handover(Exception):
    """A steering message waits and the run reached a step boundary."""


@dataclass
class _Seen:
    """What the run's stream showed so far, for its outcome."""

    streamed: list[str] = field(default_factory=list)  # the text of the current step, kept if a person stops it
    asked: list[ApprovalRequest] = field(default_factory=list)  # calls of the step that wait for a person
    cut: bool = False  # an answer reached MODEL_MAX_TOKENS (its text is stored)


@dataclass(frozen=True)
class Execution:
    """Runs the agent for a run (`engine`), publishing its events as they come."""

    engine: AgentEngine
    checkpoints: CheckpointPort
    recursion_limit: int

    async def __call__(self, active: ActiveRun, run_input: RunInput | Plan, choice: ModelChoice | None = None) -> Outcome:
        """Execute the run to its end, whatever ends it (a stop, a failure: data, never a
        crash), and the outcome it comes to, its last events published but the terminal one."""
        active.started = True
        translator = StreamTranslator()
        seen = _Seen()
        failure: BaseException | None = None
        try:
            if active.stop_reason is not None and not active.needs_input:
                raise asyncio.CancelledError  # stopped before its first step
            if callable(run_input):  # a queued message: planned here, its run already recorded
                run_input, choice = await run_input()
            await self._stream(active, run_input, choice, translator, seen)
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
        if seen.streamed and (active.stop_reason is not None or failure is not None):
            failure = await self._keep_stopped_text(active, "".join(seen.streamed), failure) or failure
        active.finishing = True
        active.failure = failure
        outcome = lifecycle.outcome_of(failure, active.stop_reason, waiting=bool(seen.asked), cut=seen.cut)
        for out in translator.close():
            active.publish(out)
        if outcome.status is RunStatus.WAITING:
            active.publish(approval_event(active.conversation_id, active.run_id, seen.asked))
            log.info("run waits for approval of %d tool call(s)", len(seen.asked), extra=active.context)
        return outcome

    async def _stream(
        self,
        active: ActiveRun,
        run_input: RunInput,
        choice: ModelChoice | None,
        translator: StreamTranslator,
        seen: _Seen,
    ) -> None:
        streamed = seen.streamed
        events = self.engine.run(active.conversation_id, active.run_id, run_input, self.recursion_limit, choice)
        async with contextlib.aclosing(events):
            async for event in events:
                if isinstance(event, InputRecorded):
                    active.input_recorded.set()
                    if active.stop_reason is not None:
                        raise asyncio.CancelledError  # a stop that waited for the input
                    continue
                if isinstance(event, ApprovalRequested):
                    seen.asked.append(event.request)
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
                    seen.cut = True
                for out in translator.feed(event):
                    active.publish(out)

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
