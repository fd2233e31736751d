"""Which pending tool calls were started, per the journal, and are unsafe to repeat."""

from __future__ import annotations

from collections.abc import Iterable

from domain import lifecycle
from domain.model import PendingCall
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
