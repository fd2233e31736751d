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
    def run(
        self, thread_id: str, run_id: str, run_input: RunInput, recursion_limit: int
    ) -> AsyncIterator[AgentEvent]:
        """Execute until the graph stops, yielding events.

        A NewMessage is appended to the thread (tool calls left without a result by an
        abandoned step are first closed with an error result, so the thread stays valid for
        the model); the engine yields InputRecorded once the message is in a committed
        checkpoint, before any other event. A Resume continues from the latest checkpoint.
        Each tool call is its own task: a call whose result was saved never runs again.
        Raises RecursionLimitReached, ModelUnavailable, ModelUnreachable, StorageFailure or
        AgentFailure; cancelling the iteration stops the model stream and tool calls at once.
        """
