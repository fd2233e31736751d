"""MessageQueue: the messages a person typed while a run worked, kept by the run store so a
queue survives restarts and is shared by every process (domain.queue has the rules)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from domain.model import Run
from domain.queue import QueuedMessage
from domain.schedules import FiringClaim


class MessageQueue(Protocol):
    """A conversation's queue, in `position` order. Every method is atomic; a queue goes
    with its conversation (deleted in the same transaction). The other half of the
    contract is on `RunRepository.finish_run` (`RunFinish.then`, `input_recorded`): the
    next waiting message starts in the transaction that records a completed outcome, as
    `start_queued` starts it (with the message's id)."""

    @abstractmethod
    async def enqueue(self, message: QueuedMessage, limit: int, firing: FiringClaim | None = None) -> QueuedMessage | None:
        """Append `message` (its id, text, created_at and steer; the store assigns the
        position after the last, or before the first for a steer) when the conversation's latest run is running or waiting
        (domain.queue.accepts_queue), checked in the same transaction, committed and
        flushed before returning. None, storing nothing, when no run is active (the
        caller starts the message itself). Raises QueueFull when `limit` messages already
        wait, ConversationNotFound for an unknown conversation. `firing`: a schedule's
        firing claimed in the same transaction, by the message's id (ports.schedules);
        FiringTaken, storing nothing, when it cannot be."""

    @abstractmethod
    async def queued(self, conversation_id: str) -> Sequence[QueuedMessage]:
        """The conversation's waiting messages (not those started), in order."""

    @abstractmethod
    async def claimed(self, run_id: str) -> QueuedMessage | None:
        """The message run `run_id` was started for, while its run has not finished."""

    @abstractmethod
    async def edit_queued(self, conversation_id: str, message_id: str, text: str) -> QueuedMessage | None:
        """Replace a waiting message's text (position kept); None when it is unknown or
        has started."""

    @abstractmethod
    async def drop_queued(self, conversation_id: str, message_id: str) -> bool:
        """Delete a waiting message; False when it is unknown or has started."""

    @abstractmethod
    async def start_queued(self, run: Run, now: datetime, after: str | None) -> QueuedMessage | None:
        """Start the first waiting message as `run` (inserted running, as `start_run`
        does; the message claimed by it), the run taking the message's id unless a run
        already has it (a message put back after its run died): so the id a client was
        given when it queued the message names its run (the returned message's `run_id`
        is the run's id). Only while the conversation's latest run is
        still `after` (None: it has none) and none is running: a compare-and-set on what
        the caller judged due (domain.queue.queue_due). None, changing nothing, otherwise
        or when nothing waits."""

    @abstractmethod
    async def steered(self, conversation_ids: Sequence[str]) -> set[str]:
        """Those of the conversations with a waiting steer message: their active runs
        should hand over at their next step boundary."""

    @abstractmethod
    async def queued_conversations(self) -> Sequence[str]:
        """Conversations with a waiting message and none started: candidates to drain."""
