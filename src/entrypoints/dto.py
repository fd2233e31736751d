"""The API's JSON for domain values, shared by the HTTP routes, the CLI's --json output and
the page: built here, at the edge, so renaming a field never touches the domain. What is
stored has formats of its own, apart from these: the checkpoint log's last message
(adapters/storage/message_log.py), a reply's context view in the thread
(adapters/langchain/messages.py) and the stream's payloads the run event log keeps
(services/stream.py)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from domain.approvals import ApprovalRequest
from domain.attachments import AttachmentLimits, attachment_fields
from domain.audit import AuditEntry
from domain.branches import BranchMarker
from domain.errors import InvalidInput
from domain.knowledge import Cited
from domain.model import (
    AssistantMessage,
    CheckpointSummary,
    ContextView,
    Conversation,
    Message,
    SummaryMessage,
    ToolResult,
    UserMessage,
    iso,
)
from domain.models import ModelInfo
from domain.queue import QueuedMessage
from domain.search import MARK_CLOSE, MARK_OPEN, SearchPage, SearchResult
from domain.usage import UsageRow
from services.conversations import ConversationDetail
from services.stream import approval_call


def message_to_dto(message: Message) -> dict[str, Any]:
    """The contract's MessageDto."""
    dto: dict[str, Any] = {"id": message.id, "role": message.role, "content": message.content}
    if isinstance(message, UserMessage) and message.attachments:
        dto["attachments"] = [attachment_fields(a) for a in message.attachments]
    if isinstance(message, AssistantMessage):
        dto.update(_reply_fields(message))
    if isinstance(message, ToolResult):
        dto.update(name=message.name, toolCallId=message.tool_call_id, status=message.status)
        if message.duration_ms is not None:
            dto["durationMs"] = message.duration_ms
        if message.skipped:
            dto["skipped"] = True
    if isinstance(message, SummaryMessage):
        dto["covers"] = message.covers
    return dto


def _reply_fields(message: AssistantMessage) -> dict[str, Any]:
    dto: dict[str, Any] = {}
    if message.tool_calls:
        dto["toolCalls"] = [{"id": c.id, "name": c.name, "args": c.args} for c in message.tool_calls]
    if message.cut:
        dto["cut"] = True
    if message.model:
        dto["model"] = message.model
    if message.context is not None and message.context.cited:
        dto["cited"] = cited_dto(message.context.cited)  # the passages its citations link to
    if message.reasoning:
        dto["reasoning"] = message.reasoning
        if message.reasoning_seconds is not None:
            dto["reasoningSeconds"] = round(message.reasoning_seconds, 1)
    return dto


def context_dto(view: ContextView) -> dict[str, Any]:
    """What the model saw when it wrote a reply (the Context schema)."""
    out: dict[str, Any] = {"sentFrom": view.sent_from, "tokens": view.tokens, "budget": view.budget}
    if view.searched:
        out["searched"] = list(view.searched)
    if view.cited:
        out["cited"] = cited_dto(view.cited)
    return out


def cited_dto(cited: Sequence[Cited]) -> list[dict[str, Any]]:
    return [{"collection": c.collection, "file": c.file, "first": c.first, "last": c.last} for c in cited]


def checkpoint_dto(summary: CheckpointSummary) -> dict[str, Any]:
    """One line of the checkpoint JSONL export."""
    dto: dict[str, Any] = {
        "checkpoint_id": summary.checkpoint_id,
        "created_at": summary.created_at,
        "step": summary.step,
        "source": summary.source,
        "next": list(summary.next),
        "message_count": summary.message_count,
        "last_message": message_to_dto(summary.last_message) if summary.last_message else None,
        "branch": summary.branch,
    }
    if summary.run_id:
        dto["run_id"] = summary.run_id
    return dto


def settings_fields(body: Mapping[str, object]) -> dict[str, object]:
    """A request's `model`, `system` and `systemMode` under the domain's names
    (domain.models.settings_change, domain.presets.preset_settings): only those it has."""
    names = {"model": "model", "system": "system", "systemMode": "system_mode"}
    return {names[key]: value for key, value in body.items() if key in names}


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
    for flag in ("pinned", "archived", "temporary"):  # only when set: the contract's shape otherwise
        if getattr(conversation, flag):
            dto[flag] = True
    return dto


def organised_dto(conversation: Conversation) -> dict[str, Any]:
    """The summary with how it is organised (domain.organise): pinned, archived, its turns
    (null: not counted yet) and who gave its title (`message`, `model`, `user`), as the page's
    list (`fields=all`), the detail and a PATCH answer give it."""
    return {
        **summary_dto(conversation),
        "pinned": conversation.pinned,
        "archived": conversation.archived,
        "turns": conversation.turns,
        "titleBy": conversation.title_by.value,
    }


def settings_dto(conversation: Conversation) -> dict[str, Any]:
    """A conversation's summary with the model and instructions it asked for (null: the
    server's default) and what they do to the server's prompt (`systemMode`), as its detail
    and PATCH answer give it (the list stays the summary)."""
    return {
        **organised_dto(conversation),
        "model": conversation.model,
        "system": conversation.system,
        "systemMode": conversation.system_mode.value,
    }


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
    return {"maxBytes": limits.max_bytes, "maxFiles": limits.max_files, "types": sorted(limits.types), "shown": limits.shown}


def queued_dto(message: QueuedMessage) -> dict[str, Any]:
    """A message waiting in a conversation's queue."""
    dto: dict[str, Any] = {
        "id": message.id,
        "position": message.position,
        "text": message.text,
        "createdAt": iso(message.created_at),
    }
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
        "context": context_dto(detail.context) if detail.context else None,
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


def usage_dto(row: UsageRow) -> dict[str, Any]:
    return {
        "user": row.user_name or row.user,
        "userId": row.user,
        "model": row.model,
        "day": row.day.isoformat(),
        "inputTokens": row.input_tokens,
        "outputTokens": row.output_tokens,
        "modelSeconds": round(row.model_seconds, 3),
        "toolSeconds": round(row.tool_seconds, 3),
        "calls": row.calls,
        "estimated": row.estimated_calls > 0,
        "estimatedCalls": row.estimated_calls,
    }


def audit_dto(entry: AuditEntry) -> dict[str, Any]:
    return {
        "seq": entry.seq,
        "at": iso(entry.at),
        "actor": entry.actor,
        "action": entry.action,
        "origin": entry.origin,
        "target": entry.target,
        "detail": entry.detail,
    }


def parse_since(value: str | None) -> datetime | None:
    """An ISO date or time (UTC when it names no zone); InvalidInput otherwise."""
    if not value:
        return None
    try:
        at = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InvalidInput("`since` is an ISO date or time (2026-03-01 or 2026-03-01T12:00:00Z)") from None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)
