"""The API's JSON for domain values, shared by the HTTP routes, the CLI's --json output and
the page: built here, at the edge, so renaming a field never touches the domain.

(Two shapes stay next to the values they describe because stored rows hold them: a
message's and a context view's, kept by the checkpoint log and the thread, and a stream
event's payload, kept by the run event log.)"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from domain.approvals import ApprovalRequest
from domain.attachments import AttachmentLimits
from domain.branches import BranchMarker
from domain.events import approval_call
from domain.model import Conversation, iso, message_to_dto
from domain.models import ModelInfo
from domain.queue import QueuedMessage
from domain.search import MARK_CLOSE, MARK_OPEN, SearchPage, SearchResult
from services.conversations import ConversationDetail

__all__ = [
    "approval_dto", "decision_dto", "detail_dto", "marker_dto", "message_to_dto", "model_dto", "pending_dto",
    "queue_dto", "queued_dto", "search_page_dto", "search_result_dto", "settings_dto", "snippet_html", "summary_dto",
]


def summary_dto(conversation: Conversation) -> dict[str, Any]:
    """The contract's ConversationSummary."""
    dto: dict[str, Any] = {
        "id": conversation.id,
        "title": conversation.title,
        "createdAt": iso(conversation.created_at),
        "updatedAt": iso(conversation.updated_at),
        "messageCount": conversation.message_count,
        "status": conversation.status.value if conversation.status else None,
    }
    if conversation.error:
        dto["error"] = {"code": conversation.error.code, "message": conversation.error.message}
    if conversation.queued:
        dto["queued"] = conversation.queued
    return dto


def settings_dto(conversation: Conversation) -> dict[str, Any]:
    """A conversation's summary with the model and system prompt it asked for (null: the
    server's default), as its detail and PATCH answer give it (the list stays the summary)."""
    return {**summary_dto(conversation), "model": conversation.model, "system": conversation.system}


def model_dto(model: ModelInfo, default: str) -> dict[str, Any]:
    """One entry of GET /api/models."""
    return {
        "name": model.name,
        "size": model.size,
        "context": model.context,
        "capabilities": list(model.capabilities),
        "family": model.family,
        "default": model.name in (default, f"{default}:latest"),
    }


def limits_dto(limits: AttachmentLimits) -> dict[str, Any]:
    """What a message may carry here (GET /api/models' `attachments`): the page checks a
    file before it reads it, and the server checks it again."""
    return {"maxBytes": limits.max_bytes, "maxFiles": limits.max_files, "types": sorted(limits.types),
            "shown": limits.shown}


def queued_dto(message: QueuedMessage) -> dict[str, Any]:
    """A message waiting in a conversation's queue."""
    dto: dict[str, Any] = {"id": message.id, "position": message.position, "text": message.text,
                           "createdAt": iso(message.created_at)}
    if message.steer:
        dto["steer"] = True
    return dto


def queue_dto(messages: Sequence[QueuedMessage]) -> dict[str, Any]:
    """The queue, as a conversation's detail lists it (nothing when empty)."""
    return {"queued": [queued_dto(m) for m in messages]} if messages else {}


def approval_dto(request: ApprovalRequest) -> dict[str, Any]:
    """As `pendingApprovals` lists a waiting call: the `approval` event's own shape."""
    return approval_call(request)


def marker_dto(marker: BranchMarker) -> dict[str, object]:
    return {"index": marker.index, "count": marker.count, "branches": list(marker.numbers)}


def snippet_html(raw: str) -> str:
    """A snippet marked with MARK_OPEN/MARK_CLOSE as HTML: the text escaped, each match
    in <mark>…</mark>."""
    return html.escape(raw, quote=False).replace(MARK_OPEN, "<mark>").replace(MARK_CLOSE, "</mark>")


def search_result_dto(result: SearchResult) -> dict[str, object]:
    return {
        "conversation": result.conversation_id,
        "title": result.title,
        "messageIndex": result.message_index,
        "role": result.role,
        "snippet": snippet_html(result.snippet),
    }


def search_page_dto(page: SearchPage) -> dict[str, object]:
    """GET /api/search's body: the results, the next page's cursor, and the inactive
    branches the search did not look in."""
    return {
        "results": [search_result_dto(r) for r in page.results],
        "nextCursor": page.next_cursor,
        "unsearched": {"branches": page.unsearched.branches, "conversations": page.unsearched.conversations},
    }


def detail_dto(detail: ConversationDetail) -> dict[str, Any]:
    """A conversation with its messages, as GET /api/conversations/ID begins (`pending_dto`
    and, on a server, `activeRun` complete it)."""
    markers = detail.markers
    messages = []
    for i, m in enumerate(detail.messages):
        dto = message_to_dto(m)
        if i in markers:
            dto["branch"] = marker_dto(markers[i])
        messages.append(dto)
    body: dict[str, Any] = {
        "conversation": settings_dto(detail.conversation),
        "messages": messages,
        "resumable": detail.resumable,
        "context": detail.context.to_dto() if detail.context else None,
        "activeBranch": detail.active_branch,
        "branchCount": max(1, len(detail.branches)),
    }
    if detail.decided:
        body["toolDecisions"] = {r.call.id: decision_dto(r) for r in detail.decided}
    return body


def decision_dto(request: ApprovalRequest) -> dict[str, Any]:
    """A person's decision on a call: `type` approve/edit/reject, `always` for an approve
    that also allows the tool from then on, the edited `args` or the rejection's `message`."""
    d = request.decision
    assert d is not None
    dto: dict[str, Any] = {"type": d.type.value, "always": d.always}
    if d.args is not None:
        dto["args"] = d.args
    if d.message:
        dto["message"] = d.message
    if request.decided_at is not None:
        dto["decidedAt"] = iso(request.decided_at)
    return dto


def pending_dto(detail: ConversationDetail) -> dict[str, Any]:
    """The calls a conversation waits on, as its detail lists them (nothing when none)."""
    body: dict[str, Any] = {}
    if detail.pending_calls:
        body["pendingToolCalls"] = [
            {"id": p.call.id, "name": p.call.name, "args": p.call.args, "outcomeUnknown": p.started, "unsafe": p.unsafe}
            for p in detail.pending_calls
        ]
        body["decisionRequired"] = detail.decision_required
    if detail.pending_approvals:
        body["pendingApprovals"] = [approval_dto(r) for r in detail.pending_approvals]
    return body
