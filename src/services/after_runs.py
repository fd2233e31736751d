"""What follows a run, off its critical path: the conversation's turn count, the title the
model writes after the first answer (AUTO_TITLE), and the end of a temporary conversation
its page has left (domain.organise).

Each ended run of this process (services.hub.RunHub.when_ended) schedules one task here,
after its outcome is written and its terminal event sent: nothing here delays a run or
fails one; a failure is logged with the conversation's id. At most MAX_PENDING tasks wait
(more ended runs are skipped: their turns and title come with the conversation's next
run) and TITLES_AT_ONCE titling requests go to the model server at a time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from domain.context import estimate_text
from domain.errors import SessionInProgress, SophosError
from domain.model import (
    NEW_CONVERSATION_TITLE,
    AssistantMessage,
    Conversation,
    Message,
    RunStatus,
    TitleSource,
    UserMessage,
    title_from_message,
    utc_now,
)
from domain.organise import TEMPORARY_IDLE, count_turns, model_title, title_request
from ports.checkpoints import CheckpointPort
from ports.model import ModelPort, TextChunk, Usage
from ports.runs import RunRepository
from services.hub import ActiveRun
from services.usage import UsageMeter, model_cost

if TYPE_CHECKING:  # imported only when tracing is on (entrypoints/factories.py)
    from services.traces import RunTracer

log = logging.getLogger(__name__)

MAX_PENDING = 64
TITLES_AT_ONCE = 2
TITLE_TEXT_MAX = 400  # characters of a titling answer read; the request is stopped there


class AfterRuns:
    def __init__(
        self,
        runs: RunRepository,
        checkpoints: CheckpointPort,
        model: Callable[[], ModelPort],
        auto_title: bool = True,
        clock: Callable[[], datetime] = utc_now,
        meter: UsageMeter | None = None,
        tracer: RunTracer | None = None,
    ) -> None:
        self.meter = meter  # a title's call counts in its owner's usage (None: not counted)
        self.tracer = tracer  # a title's call is a span of its run's trace (None: tracing off)
        self.runs = runs
        self.checkpoints = checkpoints
        self.model = model  # a getter: built by the run that ended already
        self.auto_title = auto_title
        self.clock = clock
        self._tasks: set[asyncio.Task[None]] = set()
        self._titling = asyncio.Semaphore(TITLES_AT_ONCE)

    def run_ended(self, active: ActiveRun) -> None:
        """A run of this process ended: follow it up in the background."""
        outcome = active.outcome
        if outcome is None or not outcome.recorded or not active.follow_up:
            return  # lost to another process (that one follows it up), or a hosted graph's
        if len(self._tasks) >= MAX_PENDING:
            log.info("too much follow-up pending: this run's title and turns wait for the next", extra=active.context)
            return
        task = asyncio.create_task(
            self.follow_up(active.conversation_id, outcome.status, active.run_id), name=f"after-{active.run_id}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def follow_up(self, conversation_id: str, status: RunStatus, run_id: str | None = None) -> None:
        ctx = {"conversation_id": conversation_id}
        try:
            conv = await self.runs.get_conversation(conversation_id)
            if conv is None:
                return
            if conv.temporary:
                if conversation_id in await self.runs.abandoned(self.clock() - TEMPORARY_IDLE):
                    await self.forget(conversation_id)
                return
            messages = (await self.checkpoints.get_thread(conversation_id)).messages
            turns = count_turns(messages)
            if conv.turns != turns:
                await self.runs.set_turns(conversation_id, turns)
            if conv.title_by is TitleSource.MESSAGE and status is RunStatus.COMPLETED:
                await self.title(conv, messages, run_id)
        except asyncio.CancelledError:
            raise
        except SophosError as e:
            log.warning("after the run: %s", e.message, extra=ctx)
        except Exception:
            log.exception("after the run", extra=ctx)

    async def title(self, conv: Conversation, messages: Sequence[Message], run_id: str | None = None) -> None:
        """The model's title for a conversation after its first answer, or (AUTO_TITLE off,
        or the model gave none) the first message's line in place of the placeholder. A
        person's title is never replaced (ports.runs.retitle), even one given meanwhile."""
        ctx = {"conversation_id": conv.id}
        written = await self._model_title(conv, messages, run_id) if self.auto_title else None
        if written is not None:
            if await self.runs.retitle(conv.id, written, TitleSource.MODEL):
                log.info("titled by the model", extra=ctx)
            return
        first = next((m for m in messages if isinstance(m, UserMessage)), None)
        if conv.title == NEW_CONVERSATION_TITLE and first is not None:
            line = title_from_message(first.content or (first.attachments[0].name if first.attachments else ""))
            if line != NEW_CONVERSATION_TITLE:
                await self.runs.retitle(conv.id, line, TitleSource.MESSAGE)

    async def _model_title(self, conv: Conversation, messages: Sequence[Message], run_id: str | None) -> str | None:
        request = title_request(messages)
        if request is None:
            return None
        system, text = request
        reply: list[str] = []
        usage: Usage | None = None
        async with self._titling:
            began = time.monotonic()
            span = await self._title_span(conv, run_id)
            try:
                # left early, the stream's generator is closed by the loop (its request with it)
                async for out in self.model().stream(system, [UserMessage(text)], [], conv.model):
                    if isinstance(out, TextChunk):
                        reply.append(out.text)
                        if sum(map(len, reply)) > TITLE_TEXT_MAX:
                            break
                    elif isinstance(out, Usage):
                        usage = out
                    elif isinstance(out, AssistantMessage) and not reply:
                        reply.append(out.content)
            except SophosError as e:
                log.info("no title from the model: %s", e.message, extra={"conversation_id": conv.id})
                if span is not None and self.tracer is not None:
                    await self.tracer.model_call_ended(span, None, "error", error=type(e).__name__)
                return None
            reported = (usage.prompt_tokens, usage.completion_tokens) if usage is not None else None
            ending = self.tracer.model_call_ending(span, reported, "stop") if span is not None and self.tracer else None
            if self.meter is not None:
                guess = (estimate_text(system) + estimate_text(text), estimate_text("".join(reply)))
                cost = model_cost(reported, lambda: guess, time.monotonic() - began)
                await self.meter.model_call(conv.id, conv.model or self.model().name, cost, ending)
            elif ending is not None and self.tracer is not None:
                await self.tracer.end(ending)
        return model_title("".join(reply))

    async def _title_span(self, conv: Conversation, run_id: str | None) -> str | None:
        """The title call's span, a child of the span of the run it follows (none when that
        run has no span: tracing off, or no call of it traced)."""
        if self.tracer is None or run_id is None:
            return None
        run = await self.tracer.ended_run_span(run_id, conv.id)
        if run is None:
            return None
        return await self.tracer.model_call_started(run, 0, 0, conv.model or self.model().name, purpose="title")

    async def forget(self, conversation_id: str) -> None:
        """Delete a temporary conversation: its thread, then its row (as a delete does)."""
        try:
            await self.checkpoints.delete_thread(conversation_id)
            await self.runs.delete_conversation(conversation_id)
        except SessionInProgress:
            return  # a run began meanwhile: the next sweep finds it again
        log.info("temporary conversation deleted", extra={"conversation_id": conversation_id})

    async def sweep(self) -> int:
        """Delete the temporary conversations their pages left (or nobody used for
        TEMPORARY_IDLE) that have no run going; how many."""
        gone = 0
        for cid in await self.runs.abandoned(self.clock() - TEMPORARY_IDLE):
            await self.forget(cid)
            gone += 1
        return gone

    async def close(self) -> None:
        """Stop what is pending (a title not written yet comes with the next run)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
