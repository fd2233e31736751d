"""Messages typed while a run works: what a second message on a busy conversation does
(`Multitask`), the durable queue's values, and when a queue may drain.

A queued message waits in the store (committed before it is acknowledged). When the run
before it ends `completed`, the store starts the next one in the same transaction that
records the outcome, so no crash can fall between the two; after `failed` or `cancelled`
the queue is held (shown, not sent) until a run completes again or the person drops it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from domain.errors import ErrorCode, InvalidInput
from domain.events import StreamEvent
from domain.model import Message, Run, RunStatus, RunTrigger

MAX_QUEUED = 20  # per conversation, the default of the MAX_QUEUED setting


class Multitask(StrEnum):
    """What a new message does when its conversation has an active (or waiting) run."""

    REJECT = "reject"  # refused (SessionInProgress): the contract's behaviour
    ENQUEUE = "enqueue"  # queued durably, started when the active run completes
    INTERRUPT = "interrupt"  # steer: the active run takes it in at its next step boundary (at once in a text answer)
    ROLLBACK = "rollback"  # the active run is cancelled; the message starts a new branch before its turn


def parse_multitask(value: object) -> Multitask:
    if value is None:
        return Multitask.REJECT
    if isinstance(value, str) and value in Multitask.__members__.values():
        return Multitask(value)
    raise InvalidInput('multitask must be "reject", "enqueue", "interrupt" or "rollback"')


class QueueState(StrEnum):
    WAITING = "queued"  # editable, removable
    STARTED = "started"  # claimed by `run_id`; gone once the run records it in the thread


@dataclass(frozen=True)
class QueuedMessage:
    id: str
    conversation_id: str
    position: int  # the queue's order: smallest first
    text: str
    created_at: datetime
    state: QueueState = QueueState.WAITING
    run_id: str | None = None
    steer: bool = False  # multitask interrupt: first in line, and the active run hands over at its next step


def model_writing(was: bool, event: StreamEvent) -> bool:
    """Whether a run's model is writing an answer that asked no tool call yet, after one
    more event of the run's stream (`was`: whether it was before): from the `enter` of an
    agent step until a call is asked or the step is left. A steer stops such a step at once
    instead of at its end: a text answer has no step boundary to wait for and nothing of it
    has run; what it wrote so far is kept as the answer (lifecycle.keeps_stopped_text)."""
    if event.event != "trace" or not isinstance(event.data, dict):
        return was
    kind = event.data.get("event")
    if kind == "enter":
        return event.data.get("node") == "agent"
    if kind in ("call", "leave"):
        return False
    return was


def accepts_queue(latest: Run | None) -> bool:
    """Whether a message sent with `enqueue` waits in the queue: the conversation's latest
    run is running, or waits for approval. Otherwise nothing would drain it, so it starts
    at once as a plain message."""
    return latest is not None and latest.status in (RunStatus.RUNNING, RunStatus.WAITING)


def queue_due(latest: Run | None) -> bool:
    """Whether a conversation's waiting messages should start now, with no run to hand
    them on: its last run completed (an outcome written by a reclaimer, or an older
    version, that did not start the next one), or it was a queued run stopped before its
    message was saved (the message went back to the head of the queue: send it again).
    After `failed` or `cancelled` the queue is held; while a run is active, or waits for
    approval, or was interrupted after its input (a resume continues it), it waits."""
    if latest is None or latest.status is RunStatus.COMPLETED:
        return True
    return (
        latest.status is RunStatus.INTERRUPTED
        and latest.trigger is RunTrigger.QUEUE
        and latest.error_code == ErrorCode.INPUT_NOT_RECORDED.value
    )


def queue_held(latest: Run | None) -> bool:
    """Whether a conversation's waiting messages are held: its last run failed or was
    cancelled, so none starts until a run completes again or the person sends or drops
    them (a client waiting for one would wait for a person)."""
    return latest is not None and latest.status in (RunStatus.FAILED, RunStatus.CANCELLED)


def rollback_point(messages: Sequence[Message], base_count: int) -> int | None:
    """The user message a rollback replaces: the last one before the rolled-back run's
    output (`base_count` messages precede it, its own message included). The new message
    takes its place on a new branch, so the rolled-back turn stays a branch of its own.
    None when there is none (nothing to fork from: the message is simply sent)."""
    for index in range(min(base_count, len(messages)) - 1, -1, -1):
        if messages[index].role == "user":
            return index
    return None
