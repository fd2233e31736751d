"""How the checkpoint log stores a thread's last message (its `last_message` column): a
format of its own, versioned, so that the API's field names can change without touching
stored rows.

Format 1, one JSON object:
    v       1
    role    user | assistant | tool | summary
    id      the message's id, or null
    text    its content
    calls   an assistant's tool calls: [{"id", "name", "args"}]
    cut     true: an assistant's answer stopped at MODEL_MAX_TOKENS
    model   the model that wrote an assistant's answer (added with issue 32: a reader of
            format 1 that predates it ignores it, as it does `reasoning` and `thought`)
    reasoning  an assistant's thinking;  thought  how long it thought, in seconds
    tool    a tool result's tool name
    call    the id of the call a tool result answers
    status  a tool result's success | error
    covers  a summary's count of messages it stands for
Keys with nothing to say are left out (or null, as the migrations write them).

Rows written before the format existed hold the API's MessageDto of the time; the SQLite
and PostgreSQL migrations (adapters/*/log_schema.py) convert them, and `decode` still reads
one (a process of the previous version may write one while a shared database upgrades)."""

from __future__ import annotations

import json
from typing import Any

from domain.model import AssistantMessage, Message, SummaryMessage, ToolCall, ToolResult, UserMessage

VERSION = 1


class UnknownFormat(ValueError):
    """Raised when a stored message is in a format this version cannot read."""


def encode(message: Message) -> str:
    row: dict[str, Any] = {"v": VERSION, "role": message.role, "id": message.id, "text": message.content}
    if isinstance(message, AssistantMessage):
        if message.tool_calls:
            row["calls"] = [{"id": c.id, "name": c.name, "args": c.args} for c in message.tool_calls]
        if message.cut:
            row["cut"] = True
        if message.model:
            row["model"] = message.model
        if message.reasoning:
            row["reasoning"] = message.reasoning
            if message.reasoning_seconds is not None:
                row["thought"] = message.reasoning_seconds
    elif isinstance(message, ToolResult):
        row.update(tool=message.name, call=message.tool_call_id, status=message.status)
    elif isinstance(message, SummaryMessage):
        row["covers"] = message.covers
    return json.dumps(row, ensure_ascii=False)


def decode(text: str) -> Message:
    row = json.loads(text)
    version = row.get("v")
    if version is None:
        row = _from_format_0(row)
    elif version != VERSION:
        raise UnknownFormat(f"stored message format {version!r}; this version reads {VERSION}")
    role, content, message_id = row["role"], row.get("text") or "", row.get("id")
    if role == "user":
        return UserMessage(content, id=message_id)
    if role == "assistant":
        calls = tuple(ToolCall(c.get("id") or "", c["name"], c.get("args") or {}) for c in row.get("calls") or ())
        thought = row.get("thought")
        return AssistantMessage(
            content,
            calls,
            id=message_id,
            cut=bool(row.get("cut")),
            model=row.get("model"),
            reasoning=row.get("reasoning"),
            reasoning_seconds=float(thought) if isinstance(thought, (int, float)) else None,
        )
    if role == "summary":
        return SummaryMessage(content, int(row.get("covers") or 0), id=message_id)
    return ToolResult(content, row.get("call") or "", row.get("tool") or "?", row.get("status") or "success", id=message_id)


def upgrade(text: str) -> str:
    """A stored message rewritten in the current format (a migration's step)."""
    return encode(decode(text))


def _from_format_0(dto: dict[str, Any]) -> dict[str, Any]:
    """The pre-format rows' names (the MessageDto of the time, frozen here)."""
    return {
        "role": dto["role"],
        "id": dto.get("id"),
        "text": dto.get("content"),
        "calls": dto.get("toolCalls"),
        "tool": dto.get("name"),
        "call": dto.get("toolCallId"),
        "status": dto.get("status"),
        "covers": dto.get("covers"),
        "cut": dto.get("cut"),
    }
