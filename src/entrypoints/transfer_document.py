"""The `sophos.conversation` file (format 1): a conversation whole as its JSON export writes
it and an import reads it back. A stored format of its own (people keep these files), so its
field names stay as they are whatever the API's become; import checks a file whole, with
the bounds of domain.transfer.Limits, before anything is stored: a file that does not fit
gets InvalidImport, never a partial conversation. `read_import` also takes ChatGPT's
conversations.json (domain.chatgpt)."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from domain.approvals import Decision, DecisionType
from domain.attachments import WIDEST_LIMITS, Upload, attachment_fields, attachment_from_fields, parse_upload
from domain.chatgpt import from_chatgpt, looks_like_chatgpt
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
from domain.transfer import LIMITS, ApprovalCopy, BranchCopy, ConversationCopy, Limits, check_branches

FORMAT = "sophos.conversation"
VERSION = 1


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
            view = m.context
            doc["context"] = {"sentFrom": view.sent_from, "tokens": view.tokens, "budget": view.budget}
            if view.searched:
                doc["context"]["searched"] = list(view.searched)
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
                "callId": a.call.id,
                "tool": a.call.name,
                "args": a.call.args,
                "server": a.server,
                "description": a.description,
                "requestedAt": iso(a.requested_at),
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
            calls = tuple(
                self.call(c, f"{what}.toolCalls[{i}]")
                for i, c in enumerate(self.items(doc.get("toolCalls", []), f"{what}.toolCalls"))
            )
            reasoning = doc.get("reasoning")
            view = doc.get("context")
            context = None
            if view is not None:
                v = self.obj(view, f"{what}.context")
                sent_from, tokens, budget = (
                    self.integer(v.get(k), f"{what}.context.{k}") for k in ("sentFrom", "tokens", "budget")
                )
                searched = self.items(v.get("searched", []), f"{what}.context.searched")
                names = tuple(self.text(n, f"{what}.context.searched") for n in searched)
                context = ContextView(sent_from, tokens, budget, names)
            return AssistantMessage(
                content,
                calls,
                reasoning=self.text(reasoning, f"{what}.reasoning") if reasoning else None,
                context=context,
                cut=doc.get("cut") is True,
            )
        if role == "tool":
            status: Literal["success", "error"] = "error" if doc.get("status") == "error" else "success"
            return ToolResult(
                content,
                self.text(doc.get("toolCallId"), f"{what}.toolCallId", empty=False),
                self.text(doc.get("name"), f"{what}.name", empty=False),
                status,
            )
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
        return ToolCall(
            self.text(doc.get("id"), f"{what}.id", empty=False),
            self.text(doc.get("name"), f"{what}.name", empty=False),
            self.args(doc.get("args", {}), f"{what}.args"),
            self.text(model_id, f"{what}.modelId") if model_id is not None else None,
        )

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
        call = ToolCall(
            self.text(doc.get("callId"), f"{what}.callId", empty=False),
            self.text(doc.get("tool"), f"{what}.tool", empty=False),
            self.args(doc.get("args", {}), f"{what}.args"),
        )
        decided = doc.get("decision")
        return ApprovalCopy(
            call,
            self.text(doc.get("server", ""), f"{what}.server"),
            self.text(doc.get("description", ""), f"{what}.description"),
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


def _branches(r: _Reader, c: Mapping[str, Any], limits: Limits) -> list[BranchCopy]:
    """The document's `branches`, each checked (check_branches then checks how they join)."""
    raw_branches = r.items(c.get("branches"), "branches")
    if not raw_branches:
        raise r.fail("a conversation needs at least one branch")
    if len(raw_branches) > limits.branches:
        raise r.fail(f"more than {limits.branches} branches")
    branches: list[BranchCopy] = []
    for i, raw in enumerate(raw_branches):
        b = r.obj(raw, f"branches[{i}]")
        parent = b.get("parent")
        messages = tuple(
            r.message(m, f"branches[{i}].messages[{k}]")
            for k, m in enumerate(r.items(b.get("messages"), f"branches[{i}].messages"))
        )
        branches.append(
            BranchCopy(
                r.integer(b.get("number"), f"branches[{i}].number", 1),
                None if parent is None else r.integer(parent, f"branches[{i}].parent", 1),
                r.integer(b.get("fork"), f"branches[{i}].fork"),
                messages,
            )
        )
    return branches


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
    branches = _branches(r, c, limits)
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
    copy = ConversationCopy(
        title,
        r.time(c.get("createdAt"), "createdAt"),
        r.time(c.get("updatedAt"), "updatedAt"),
        tuple(branches),
        active,
        approvals,
        tuple(files.values()),
    )
    missing = [d for d in copy.digests() if d not in files]
    if missing:
        raise r.fail(f"a message names a file the export does not hold ({missing[0][:12]}…)")
    return copy


def read_import(data: bytes, now: datetime, limits: Limits | None = None) -> list[ConversationCopy]:
    """Every conversation of a file to import, checked whole before anything is stored: a
    `sophos.conversation` document (or a list of them) or ChatGPT's conversations.json."""
    limits = limits or LIMITS  # read when called: tests narrow it
    if len(data) > limits.bytes:
        raise InvalidImport(f"the file is larger than {limits.bytes // (1024 * 1024)} MB")
    try:
        doc = json.loads(data)
    except RecursionError:
        raise InvalidImport("the file nests deeper than any export does") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise InvalidImport(f"the file is not JSON ({e})") from None
    items = doc if isinstance(doc, list) else [doc]
    if len(items) > limits.conversations:
        raise InvalidImport(f"the file holds more than {limits.conversations} conversations")
    if items and all(isinstance(d, dict) and d.get("format") == FORMAT for d in items):
        where = "conversation" if len(items) == 1 else "conversation {}"
        return [from_document(d, limits, where.format(i + 1)) for i, d in enumerate(items)]
    if isinstance(doc, list) and not doc:
        return []  # a list of no conversations, in either format
    if looks_like_chatgpt(doc):
        return from_chatgpt(doc, now, limits)
    if isinstance(doc, dict) and "format" in doc:
        return [from_document(doc, limits)]  # says what is wrong with its format or version
    raise InvalidImport("not a Sophos export (format sophos.conversation) nor ChatGPT's conversations.json")


NOTHING = "nothing to import: the file holds no conversation with a message to keep"


def read_imports(files: Sequence[bytes], now: datetime, limits: Limits | None = None) -> list[ConversationCopy]:
    """Every conversation of an import's files, each checked whole before anything is stored;
    InvalidImport for the first malformed one, or when none holds anything to import. (It
    runs in the import worker's process: the limits come as an argument, not from there.)"""
    limits = limits or LIMITS
    copies = [copy for data in files for copy in read_import(data, now, limits)]
    if len(copies) > limits.conversations:
        raise InvalidImport(f"the files hold more than {limits.conversations} conversations")
    if not copies:
        raise InvalidImport(NOTHING)
    return copies
