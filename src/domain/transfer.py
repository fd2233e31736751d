"""A conversation as a file, whole: every branch, every message with what Sophos keeps of
it, the approvals' decisions. The format (`sophos.conversation`, version 1) is read back
by import, so it is checked here with bounds before anything is stored: a file that does
not fit gets InvalidImport, never a partial conversation.

A branch holds its own messages only (from its fork index on); the messages before are its
parent's, as in domain.branches. Ids are not part of what is imported: every import is a
new conversation with new message ids (tool call ids are kept: approvals name them).
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from domain.approvals import Decision, DecisionType
from domain.attachments import WIDEST_LIMITS, Upload, attachment_fields, attachment_from_fields, parse_upload
from domain.branches import Branch, lineage
from domain.errors import InvalidImport, InvalidInput, SophosError
from domain.model import (
    AssistantMessage,
    ContextView,
    Message,
    SummaryMessage,
    ToolCall,
    ToolResult,
    UserMessage,
    clean_title,
    iso,
)

FORMAT = "sophos.conversation"
VERSION = 1


@dataclass(frozen=True)
class Limits:
    """What one import may hold. The file's size is checked by the edge before parsing."""

    bytes: int = 64 * 1024 * 1024
    conversations: int = 2000
    messages: int = 20_000  # per conversation, over all its branches
    branches: int = 200  # per conversation: each costs a few synced writes
    text: int = 2_000_000  # characters of one message
    depth: int = 32  # nesting of a tool call's arguments


LIMITS = Limits()


@dataclass(frozen=True)
class BranchCopy:
    number: int
    parent: int | None
    fork: int
    messages: tuple[Message, ...]  # its own, from `fork` on


@dataclass(frozen=True)
class ApprovalCopy:
    """A tool call that asked for approval, and the decision given (None: none yet)."""

    call: ToolCall
    server: str
    description: str
    requested_at: datetime
    decision: Decision | None = None
    decided_at: datetime | None = None


@dataclass(frozen=True)
class ConversationCopy:
    title: str
    created_at: datetime
    updated_at: datetime
    branches: tuple[BranchCopy, ...]  # numbered 1..n in order
    active: int = 1
    approvals: tuple[ApprovalCopy, ...] = field(default=())
    files: tuple[Upload, ...] = field(default=())  # the files its user messages carry, each once

    def digests(self) -> list[str]:
        """The files its messages name, every branch's, each once in order."""
        named = (a.digest for b in self.branches for m in b.messages if isinstance(m, UserMessage) for a in m.attachments)
        return list(dict.fromkeys(named))

    def content(self, number: int) -> tuple[Message, ...]:
        """The whole message list of branch `number`: its lineage's prefixes, then its own."""
        out: tuple[Message, ...] = ()
        shapes = [Branch(x.number, x.parent, x.fork, 0, False) for x in self.branches]
        for b in lineage(shapes, number):
            out = out[: b.fork] + self.branches[b.number - 1].messages
        return out

    @property
    def message_count(self) -> int:
        """Of the active branch, as the conversation's summary counts it."""
        return len(self.content(self.active))


# --- writing ---------------------------------------------------------------------------


def message_doc(m: Message) -> dict[str, Any]:
    doc: dict[str, Any] = {"role": m.role, "content": m.content}
    if isinstance(m, UserMessage) and m.attachments:
        doc["attachments"] = [attachment_fields(a) for a in m.attachments]
    if isinstance(m, AssistantMessage):
        if m.tool_calls:
            doc["toolCalls"] = [
                {"id": c.id, "name": c.name, "args": c.args, **({"modelId": c.model_id} if c.model_id else {})}
                for c in m.tool_calls
            ]
        if m.reasoning:
            doc["reasoning"] = m.reasoning
        if m.context is not None:
            doc["context"] = m.context.to_dto()
        if m.cut:
            doc["cut"] = True
    elif isinstance(m, ToolResult):
        doc.update(toolCallId=m.tool_call_id, name=m.name, status=m.status)
    elif isinstance(m, SummaryMessage):
        doc["covers"] = m.covers
    return doc


def _decision_doc(d: Decision) -> dict[str, Any]:
    doc: dict[str, Any] = {"type": d.type.value}
    if d.args is not None:
        doc["args"] = d.args
    if d.message is not None:
        doc["message"] = d.message
    if d.always:
        doc["always"] = True
    return doc


def to_document(copy: ConversationCopy, conversation_id: str | None = None) -> dict[str, Any]:
    """The file's JSON. `conversation_id`: the exported conversation's, for reference only."""
    conversation: dict[str, Any] = {
        **({"id": conversation_id} if conversation_id else {}),
        "title": copy.title,
        "createdAt": iso(copy.created_at),
        "updatedAt": iso(copy.updated_at),
        "activeBranch": copy.active,
        "branches": [
            {"number": b.number, "parent": b.parent, "fork": b.fork, "messages": [message_doc(m) for m in b.messages]}
            for b in copy.branches
        ],
        "approvals": [
            {
                "callId": a.call.id, "tool": a.call.name, "args": a.call.args, "server": a.server,
                "description": a.description, "requestedAt": iso(a.requested_at),
                "decision": _decision_doc(a.decision) if a.decision else None,
                "decidedAt": iso(a.decided_at) if a.decided_at else None,
            }
            for a in copy.approvals
        ],
    }
    if copy.files:  # the bytes of every file, once (messages name them by digest)
        conversation["attachments"] = [
            {**attachment_fields(f.attachment), "data": base64.b64encode(f.data).decode("ascii")} for f in copy.files
        ]
    return {"format": FORMAT, "version": VERSION, "conversation": conversation}


def file_name(title: str, created_at: datetime, extension: str) -> str:
    """`hello-sophos-2026-12-05.json`: the title as ASCII words, then the creation date."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = "-".join(re.findall(r"[a-z0-9]+", ascii_title.lower()))[:60].strip("-") or "conversation"
    return f"{slug}-{created_at.astimezone(UTC).date().isoformat()}.{extension}"


# --- reading ---------------------------------------------------------------------------


class _Reader:
    """Checks one conversation of a file, naming where it went wrong."""

    def __init__(self, where: str, limits: Limits) -> None:
        self.where = where
        self.limits = limits
        self.count = 0

    def fail(self, what: str) -> InvalidImport:
        return InvalidImport(f"{self.where}: {what}")

    def obj(self, value: object, what: str) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(f"{what} must be an object")
        return value

    def items(self, value: object, what: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(f"{what} must be a list")
        return value

    def text(self, value: object, what: str, empty: bool = True) -> str:
        if not isinstance(value, str) or (not empty and not value):
            raise self.fail(f"{what} must be {'a' if empty else 'a non-empty'} string")
        if len(value) > self.limits.text:
            raise self.fail(f"{what} is longer than {self.limits.text} characters")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise self.fail(f"{what} is not valid Unicode") from None
        return value

    def integer(self, value: object, what: str, low: int = 0) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise self.fail(f"{what} must be an integer of at least {low}")
        return value

    def time(self, value: object, what: str) -> datetime:
        try:
            when = datetime.fromisoformat(self.text(value, what).replace("Z", "+00:00"))
        except ValueError:
            raise self.fail(f"{what} must be an ISO-8601 time") from None
        if when.tzinfo is None:
            raise self.fail(f"{what} must name its time zone")
        return when.astimezone(UTC)

    def args(self, value: object, what: str) -> dict[str, Any]:
        args = self.obj(value, what)
        _check_depth(args, self.limits.depth, lambda: self.fail(f"{what} nests deeper than {self.limits.depth}"))
        return dict(args)

    def counted(self) -> None:
        self.count += 1
        if self.count > self.limits.messages:
            raise self.fail(f"more than {self.limits.messages} messages")

    def message(self, raw: object, what: str) -> Message:
        doc = self.obj(raw, what)
        self.counted()
        role = doc.get("role")
        content = self.text(doc.get("content", ""), f"{what}.content")
        if role == "user":
            raw_files = self.items(doc.get("attachments", []), f"{what}.attachments")
            files = tuple(attachment_from_fields(a) for a in raw_files)
            if any(f is None for f in files):
                raise self.fail(f"{what}.attachments must be a list of {{name, type, size, digest}}")
            return UserMessage(content, attachments=tuple(f for f in files if f is not None))
        if role == "assistant":
            calls = tuple(self.call(c, f"{what}.toolCalls[{i}]") for i, c in enumerate(self.items(doc.get("toolCalls", []), f"{what}.toolCalls")))
            reasoning = doc.get("reasoning")
            view = doc.get("context")
            context = None
            if view is not None:
                v = self.obj(view, f"{what}.context")
                context = ContextView(*(self.integer(v.get(k), f"{what}.context.{k}") for k in ("sentFrom", "tokens", "budget")))
            return AssistantMessage(content, calls, reasoning=self.text(reasoning, f"{what}.reasoning") if reasoning else None,
                                    context=context, cut=doc.get("cut") is True)
        if role == "tool":
            status: Literal["success", "error"] = "error" if doc.get("status") == "error" else "success"
            return ToolResult(content, self.text(doc.get("toolCallId"), f"{what}.toolCallId", empty=False),
                              self.text(doc.get("name"), f"{what}.name", empty=False), status)
        if role == "summary":
            return SummaryMessage(content, self.integer(doc.get("covers"), f"{what}.covers"))
        raise self.fail(f"{what}.role must be user, assistant, tool or summary")

    def file(self, raw: object, what: str) -> Upload:
        doc = self.obj(raw, what)
        try:
            data = base64.b64decode(self.text(doc.get("data"), f"{what}.data"), validate=True)
            upload = parse_upload(doc.get("name"), doc.get("type"), data, WIDEST_LIMITS)  # accepted once, maybe by another server
        except (binascii.Error, ValueError):
            raise self.fail(f"{what}.data must be base64") from None
        except SophosError as e:
            raise self.fail(f"{what}: {e.message}") from None
        if upload.attachment.digest != doc.get("digest"):
            raise self.fail(f"{what}.digest is not the SHA-256 of its data")
        return upload

    def call(self, raw: object, what: str) -> ToolCall:
        doc = self.obj(raw, what)
        model_id = doc.get("modelId")
        return ToolCall(self.text(doc.get("id"), f"{what}.id", empty=False), self.text(doc.get("name"), f"{what}.name", empty=False),
                        self.args(doc.get("args", {}), f"{what}.args"),
                        self.text(model_id, f"{what}.modelId") if model_id is not None else None)

    def decision(self, raw: object, what: str) -> Decision:
        doc = self.obj(raw, what)
        try:
            kind = DecisionType(str(doc.get("type")))
        except ValueError:
            raise self.fail(f"{what}.type must be one of {', '.join(t.value for t in DecisionType)}") from None
        args = self.args(doc["args"], f"{what}.args") if doc.get("args") is not None else None
        message = self.text(doc["message"], f"{what}.message") if doc.get("message") is not None else None
        return Decision(kind, args, message, doc.get("always") is True)

    def approval(self, raw: object, what: str) -> ApprovalCopy:
        doc = self.obj(raw, what)
        call = ToolCall(self.text(doc.get("callId"), f"{what}.callId", empty=False),
                        self.text(doc.get("tool"), f"{what}.tool", empty=False), self.args(doc.get("args", {}), f"{what}.args"))
        decided = doc.get("decision")
        return ApprovalCopy(
            call, self.text(doc.get("server", ""), f"{what}.server"), self.text(doc.get("description", ""), f"{what}.description"),
            self.time(doc.get("requestedAt"), f"{what}.requestedAt"),
            self.decision(decided, f"{what}.decision") if decided is not None else None,
            self.time(doc["decidedAt"], f"{what}.decidedAt") if doc.get("decidedAt") is not None else None,
        )


def _check_depth(value: object, limit: int, failure: Any) -> None:
    """Without recursion: a hostile file's nesting must not cost a stack."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            raise failure()
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


def check_branches(copy_branches: Sequence[BranchCopy], fail: Any) -> None:
    """Numbers 1..n in order; branch 1 the root; every other branch forks from an earlier
    one inside its messages, after the parent's own fork (the normal form of
    domain.branches), or from the start (parent None, fork 0)."""
    lengths: dict[int, int] = {}
    forks: dict[int, int] = {}
    for i, b in enumerate(copy_branches, start=1):
        if b.number != i:
            raise fail(f"branches must be numbered 1, 2, ... in order (found {b.number} at {i})")
        if i == 1 and (b.parent is not None or b.fork != 0):
            raise fail("branch 1 must have no parent and fork 0")
        if b.parent is None:
            if b.fork != 0:
                raise fail(f"branch {i} has no parent, so its fork must be 0")
            if i > 1 and lengths[1] == 0:
                raise fail(f"branch {i} forks from an empty conversation")
            lengths[i] = len(b.messages)
        else:
            if not 1 <= b.parent < i:
                raise fail(f"branch {i}'s parent must be an earlier branch")
            if not forks[b.parent] < b.fork < lengths[b.parent]:
                raise fail(f"branch {i} must fork inside its parent's own messages")
            lengths[i] = b.fork + len(b.messages)
        forks[i] = b.fork


def from_document(doc: object, limits: Limits | None = None, where: str = "conversation") -> ConversationCopy:
    """A `sophos.conversation` document checked whole; InvalidImport naming what is wrong."""
    limits = limits or LIMITS  # read when called: tests narrow it
    r = _Reader(where, limits)
    top = r.obj(doc, "the file")
    if top.get("format") != FORMAT:
        raise r.fail(f'not a Sophos export (format must be "{FORMAT}")')
    if top.get("version") != VERSION:
        raise r.fail(f"version {top.get('version')!r} is not one this Sophos reads (it reads {VERSION})")
    c = r.obj(top.get("conversation"), "conversation")
    try:
        title = clean_title(c.get("title"))
    except InvalidInput:
        raise r.fail("title must be a non-empty string of at most 200 characters") from None
    raw_branches = r.items(c.get("branches"), "branches")
    if not raw_branches:
        raise r.fail("a conversation needs at least one branch")
    if len(raw_branches) > limits.branches:
        raise r.fail(f"more than {limits.branches} branches")
    branches: list[BranchCopy] = []
    for i, raw in enumerate(raw_branches):
        b = r.obj(raw, f"branches[{i}]")
        parent = b.get("parent")
        messages = tuple(r.message(m, f"branches[{i}].messages[{k}]") for k, m in enumerate(r.items(b.get("messages"), f"branches[{i}].messages")))
        branches.append(BranchCopy(r.integer(b.get("number"), f"branches[{i}].number", 1),
                                   None if parent is None else r.integer(parent, f"branches[{i}].parent", 1),
                                   r.integer(b.get("fork"), f"branches[{i}].fork"), messages))
    check_branches(branches, r.fail)
    active = r.integer(c.get("activeBranch", 1), "activeBranch", 1)
    if active > len(branches):
        raise r.fail(f"activeBranch {active} is not one of its {len(branches)} branches")
    raw_approvals = r.items(c.get("approvals", []), "approvals")
    if len(raw_approvals) > limits.messages:
        raise r.fail(f"more than {limits.messages} approvals")
    approvals = tuple(r.approval(a, f"approvals[{i}]") for i, a in enumerate(raw_approvals))
    if len({a.call.id for a in approvals}) != len(approvals):
        raise r.fail("two approvals name the same call")
    raw_files = r.items(c.get("attachments", []), "attachments")
    if len(raw_files) > limits.messages:
        raise r.fail(f"more than {limits.messages} attachments")
    files = {f.attachment.digest: f for f in (r.file(x, f"attachments[{i}]") for i, x in enumerate(raw_files))}
    copy = ConversationCopy(title, r.time(c.get("createdAt"), "createdAt"), r.time(c.get("updatedAt"), "updatedAt"),
                            tuple(branches), active, approvals, tuple(files.values()))
    missing = [d for d in copy.digests() if d not in files]
    if missing:
        raise r.fail(f"a message names a file the export does not hold ({missing[0][:12]}…)")
    return copy
