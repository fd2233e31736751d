"""The API's JSON for domain values, shared by the HTTP routes, the CLI's --json output and
the page: built here, at the edge, so renaming a field never touches the domain.

(Two shapes stay next to the values they describe because stored rows hold them: a
message's and a context view's, kept by the checkpoint log and the thread, and a stream
event's payload, kept by the run event log.)"""

from __future__ import annotations

import html
from typing import Any

from domain.approvals import ApprovalRequest
from domain.branches import BranchMarker
from domain.events import approval_call
from domain.model import Conversation, iso, message_to_dto
from domain.search import MARK_CLOSE, MARK_OPEN, SearchResult

__all__ = ["approval_dto", "marker_dto", "message_to_dto", "search_result_dto", "snippet_html", "summary_dto"]


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
    return dto


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
