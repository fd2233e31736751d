"""AgentEngine: executes a run on a thread, checkpointing after every step."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from domain.events import AgentEvent


@dataclass(frozen=True)
class NewMessage:
    text: str


@dataclass(frozen=True)
class Resume:
    """Continue from the latest checkpoint. The pending tool calls named in `skip` are not
    run again: each gets a result saying its outcome is unknown."""

    skip: frozenset[str] = frozenset()


RunInput = NewMessage | Resume


class AgentEngine(Protocol):
    """The agent graph (START -> agent <-> tools -> END) over a durable checkpointer."""

    @abstractmethod
    async def record_input(self, thread_id: str, run_id: str, text: str) -> None:
        """Durably append the user's message to the thread (a committed checkpoint) so
        that a following `run(..., Resume())` starts from it. Tool calls left without a
        result by an abandoned step are closed first with an error result, so the
        thread stays valid for the model."""

    @abstractmethod
    def run(
        self, thread_id: str, run_id: str, run_input: Resume, recursion_limit: int
    ) -> AsyncIterator[AgentEvent]:
        """Execute from the latest checkpoint until the graph stops, yielding events.

        Each tool call is its own task: a call whose result was saved never runs again.
        Raises RecursionLimitReached, ModelUnavailable, ModelUnreachable or AgentFailure;
        cancelling the iteration stops the model stream and tool calls at once.
        """
