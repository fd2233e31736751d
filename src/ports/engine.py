"""AgentEngine: executes a run on a thread, checkpointing after every step."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncGenerator
from typing import Protocol

from domain.events import AgentEvent
from domain.inputs import Fork, NewMessage, Resume, RunInput
from domain.models import ModelChoice

__all__ = ["AgentEngine", "Fork", "NewMessage", "Resume", "RunInput"]


class AgentEngine(Protocol):
    """The agent (model ⇄ tools) over a durable checkpointer."""

    @abstractmethod
    def run(
        self, thread_id: str, run_id: str, run_input: RunInput, recursion_limit: int, choice: ModelChoice | None = None
    ) -> AsyncGenerator[AgentEvent, None]:
        """Execute until the agent stops, yielding events. Every model call of the run uses
        `choice` (its model, system prompt and context size; None: the server's defaults).

        A NewMessage is appended to the thread (after its closings); the engine yields
        InputRecorded once the message is in a committed checkpoint, before any other
        event; a Fork likewise, once the new branch's first checkpoint is. A Resume continues from the latest checkpoint. Each tool call is its own
        task: a call whose result was saved never runs again. Every checkpoint is written
        only while `run_id` is running: a run taken over by another process raises RunLost
        at its next write. Raises RecursionLimitReached, ModelUnavailable,
        ModelUnreachable, StorageFailure, RunLost or AgentFailure; cancelling the
        iteration stops the model stream and tool calls at once.
        """

    @abstractmethod
    async def keep_stopped_text(self, thread_id: str, run_id: str, text: str) -> None:
        """Append `text`, streamed by the agent step a person stopped, to the thread as an
        assistant message, so the answer they saw stays in the conversation. The step
        still counts as work left: a resume asks the model again, after that text.
        Fenced like `run` (RunLost when `run_id` is no longer running)."""
