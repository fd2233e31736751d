"""CheckpointPort: read access to the durable execution state of threads."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Protocol

from domain.model import CheckpointSummary, ThreadHead, ThreadState


class CheckpointPort(Protocol):
    """The thread (thread_id = conversation id) as the checkpointer saved it.

    Reading never calls the model or resolves tools.
    """

    @abstractmethod
    def get_thread(self, thread_id: str) -> ThreadState:
        """The latest checkpoint: messages, `next`, and the tool calls still pending.

        An unknown thread gives an empty ThreadState (no messages, next empty).
        """

    @abstractmethod
    def head(self, thread_id: str) -> ThreadHead:
        """`next`, message count and writing run of the latest checkpoint, cheaply (no
        messages are loaded). An unknown thread gives an empty ThreadHead."""

    @abstractmethod
    def list_checkpoints(self, thread_id: str) -> Sequence[CheckpointSummary]:
        """Every checkpoint of the thread, across all runs, oldest first."""

    @abstractmethod
    def delete_thread(self, thread_id: str) -> None:
        """Remove every checkpoint and pending write of the thread. Idempotent."""
