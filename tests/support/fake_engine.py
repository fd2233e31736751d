"""A scripted agent engine over in-memory threads: lifecycle unit tests with no graph.

Each run plays the next script: tokens (with a pause between them), optionally a failure,
or a wait on an event the test controls. Like the real engine, every write is fenced on
the run still being `running` in the run repository (RunLost otherwise).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import Any

from domain.errors import RunLost
from domain.events import AgentEvent, InputRecorded, NodeStarted, TokenDelta
from domain.model import (
    AssistantMessage,
    CheckpointSummary,
    Message,
    RunStatus,
    ThreadHead,
    ThreadState,
    UserMessage,
)
from ports.checkpoints import CheckpointPort
from ports.engine import AgentEngine, NewMessage, RunInput
from ports.runs import RunRepository


@dataclass
class Script:
    tokens: Sequence[str] = ("ok",)
    pause: float = 0.0
    fail: Exception | None = None  # raised after the tokens
    gate: asyncio.Event | None = None  # awaited before the first token


@dataclass
class Thread:
    messages: list[Message] = field(default_factory=list)
    work_left: bool = False
    run_id: str | None = None
    checkpoints: int = 0


class FakeEngine(AgentEngine, CheckpointPort):
    def __init__(self, runs: RunRepository, scripts: Sequence[Script] = ()) -> None:
        self.runs = runs
        self.scripts = list(scripts)
        self.threads: dict[str, Thread] = {}
        self.writes: list[str] = []  # run ids, one per checkpoint written

    async def _write(self, thread_id: str, run_id: str, messages: Sequence[Message], work_left: bool) -> None:
        run = await self.runs.get_run(run_id)
        if run is None or run.status is not RunStatus.RUNNING:
            raise RunLost()
        thread = self.threads.setdefault(thread_id, Thread())
        thread.messages.extend(messages)
        thread.work_left, thread.run_id = work_left, run_id
        thread.checkpoints += 1
        self.writes.append(run_id)

    async def run(
        self, thread_id: str, run_id: str, run_input: RunInput, recursion_limit: int, choice: Any = None
    ) -> AsyncGenerator[AgentEvent, None]:
        script = self.scripts.pop(0) if self.scripts else Script()
        if isinstance(run_input, NewMessage):
            await self._write(thread_id, run_id, [*run_input.closings, UserMessage(run_input.text)], True)
            yield InputRecorded()
        yield NodeStarted(1, "agent", "fake")
        if script.gate is not None:
            await script.gate.wait()
        for token in script.tokens:
            await asyncio.sleep(script.pause)
            yield TokenDelta(1, token)
        if script.fail is not None:
            raise script.fail
        await self._write(thread_id, run_id, [AssistantMessage("".join(script.tokens))], False)

    async def keep_stopped_text(self, thread_id: str, run_id: str, text: str) -> None:
        await self._write(thread_id, run_id, [AssistantMessage(text)], True)

    # --- CheckpointPort -----------------------------------------------------------------

    async def get_thread(self, thread_id: str) -> ThreadState:
        t = self.threads.get(thread_id)
        if t is None:
            return ThreadState()
        return ThreadState(tuple(t.messages), t.work_left, str(t.checkpoints), t.run_id)

    async def head(self, thread_id: str) -> ThreadHead:
        t = self.threads.get(thread_id)
        if t is None:
            return ThreadHead()
        return ThreadHead(t.work_left, False, len(t.messages), t.run_id, str(t.checkpoints))

    async def list_checkpoints(self, thread_id: str) -> Sequence[CheckpointSummary]:
        return []

    async def delete_thread(self, thread_id: str) -> None:
        self.threads.pop(thread_id, None)
