"""Pending tool calls: which were started (per the journal) and are unsafe to repeat, and
what a new run on the conversation starts from."""

from __future__ import annotations

from collections.abc import Iterable

from domain import lifecycle
from domain.branches import edit_fork, regenerate_fork
from domain.model import PendingCall
from ports.checkpoints import CheckpointPort
from ports.engine import Fork, NewMessage, Resume, RunInput
from ports.journal import ToolJournal


async def annotate_pending(
    pending: Iterable[PendingCall], journal: ToolJournal, conversation_id: str
) -> tuple[PendingCall, ...]:
    """Mark the pending calls that were started (per the journal) and are unsafe to repeat."""
    calls = tuple(pending)
    if not calls:
        return calls
    keys = {p.call.id: lifecycle.idempotency_key(conversation_id, p.call.id) for p in calls}
    entries = await journal.entries(keys.values())
    out = []
    for p in calls:
        entry = entries.get(keys[p.call.id])
        out.append(PendingCall(p.call, started=entry is not None, unsafe=bool(entry and entry.unsafe)))
    return tuple(out)


async def plan_input(
    checkpoints: CheckpointPort, journal: ToolJournal, conversation_id: str, text: str, resume: bool, decision: str | None
) -> tuple[RunInput, int]:
    """What a run on the conversation starts from: a new message (closing the calls left
    pending, per the settle plan) or a resume (per the resume plan), with the thread's
    message count before the run's own messages."""
    head = await checkpoints.head(conversation_id)
    pending: tuple[PendingCall, ...] = ()
    if head.awaiting_tools:
        thread = await checkpoints.get_thread(conversation_id)
        pending = await annotate_pending(thread.pending_calls, journal, conversation_id)
    if resume:
        skip = lifecycle.resume_plan(head, pending, decision)
        return Resume(skip=skip), lifecycle.base_count(head, 0, new_message=False)
    closings = lifecycle.settle_plan(pending)
    return NewMessage(text, closings), lifecycle.base_count(head, len(closings), new_message=True)


async def plan_fork(checkpoints: CheckpointPort, conversation_id: str, text: str, edit_of: object) -> tuple[RunInput, int]:
    """A run on a new branch: an edit of message `edit_of` (with `text`), or, when
    `edit_of` is None, a regenerate of the last answer; with the message count the run
    starts from."""
    messages = (await checkpoints.get_thread(conversation_id)).messages
    if edit_of is not None:
        at = edit_fork(messages, edit_of)
        return Fork(at, text), at + 1
    at = regenerate_fork(messages)
    return Fork(at, None), at
