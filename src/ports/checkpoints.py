"""CheckpointPort: read access to the durable execution state of threads."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Protocol

from domain.model import CheckpointSummary, ThreadHead, ThreadState


class CheckpointPort(Protocol):
    """The thread (thread_id = conversation id) as the checkpointer saved it, in the
    lifecycle's terms: messages, whether work is left, which tool calls are pending.

    Reading never calls the model or resolves tools, and never blocks the event loop.
    """

    @abstractmethod
    async def get_thread(self, thread_id: str) -> ThreadState:
        """The latest checkpoint: messages, work left, and the tool calls still pending.

        An unknown thread gives an empty ThreadState (no messages, no work left).
        """

    @abstractmethod
    async def head(self, thread_id: str) -> ThreadHead:
        """Work left, message count and writing run of the latest checkpoint, cheaply (no
        messages are loaded). An unknown thread gives an empty ThreadHead."""

    async def count_written(self, thread_id: str, run_id: str) -> int:
        """The message count of the thread's latest checkpoint, once the run `run_id` of
        this process has finished writing (every write of it awaited). An adapter may
        answer from what it wrote itself, without a read."""
        return (await self.head(thread_id)).message_count

    @abstractmethod
    async def list_checkpoints(self, thread_id: str) -> Sequence[CheckpointSummary]:
        """Every checkpoint of the thread, across all runs, oldest first."""

    @abstractmethod
    async def delete_thread(self, thread_id: str) -> None:
        """Remove every checkpoint and pending write of the thread. Idempotent."""
