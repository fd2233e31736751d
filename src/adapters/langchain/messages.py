"""Translation between LangChain message objects and the domain's messages."""

from __future__ import annotations

import base64
import operator
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from adapters.langchain.prefix import PrefixMemo
from domain.attachments import Attachment, attachment_fields, attachment_from_fields
from domain.knowledge import Cited
from domain.model import (
    AssistantMessage,
    ContextView,
    Message,
    SummaryMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)

SUMMARY_KEY = "sophos_summary"  # additional_kwargs of the SystemMessage a summary is stored as
CONTEXT_KEY = "sophos_context"  # additional_kwargs of a stored reply: what the model saw
CUT_KEY = "sophos_cut"  # additional_kwargs of a stored reply stopped at MODEL_MAX_TOKENS
MODEL_IDS_KEY = "sophos_model_call_ids"  # additional_kwargs of a stored reply: our call id -> the model's
MODEL_KEY = "sophos_model"  # additional_kwargs of a stored reply: the model that wrote it
THOUGHT_KEY = "sophos_reasoning_seconds"  # additional_kwargs of a stored reply: how long it thought
FILES_KEY = "sophos_attachments"  # additional_kwargs of a stored user message: its files' {name, type, size, digest}
TOOL_KEY = "sophos_tool"  # additional_kwargs of a stored tool result: {"ms": duration} or {"skipped": true}


def _attachments(extra: Any) -> tuple[Attachment, ...]:
    raw = extra.get(FILES_KEY) if isinstance(extra, dict) else None
    if not isinstance(raw, list):
        return ()
    return tuple(a for a in map(attachment_from_fields, raw) if a is not None)


def _tool_result(content: str, call_id: str, name: str, status: Any, id: str | None, extra: Any) -> ToolResult:
    meta = extra.get(TOOL_KEY) if isinstance(extra, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    ms = meta.get("ms")
    return ToolResult(
        content,
        call_id,
        name,
        "error" if status == "error" else "success",
        id=id,
        duration_ms=int(ms) if isinstance(ms, (int, float)) and not isinstance(ms, bool) else None,
        skipped=meta.get("skipped") is True,
    )


def _calls(raw: Iterable[Any], extra: dict[str, Any] | None) -> tuple[ToolCall, ...]:
    model_ids = (extra or {}).get(MODEL_IDS_KEY)
    if not isinstance(model_ids, dict):
        model_ids = {}
    return tuple(
        ToolCall(c.get("id") or "", c["name"], dict(c.get("args") or {}), model_ids.get(c.get("id") or ""))
        for c in raw
        if isinstance(c, dict) and "name" in c
    )


def flatten(content: Any) -> str:
    """Plain text of a message's content; multi-part content is flattened to its text."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content or []:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
    return "".join(parts)


# a stored reply's CONTEXT_KEY: {"sentFrom", "tokens", "budget"}, as every thread since the
# context budget holds it (the API's Context shape of the time, kept as it is: a stored format)
def _context_fields(view: ContextView) -> dict[str, Any]:
    fields: dict[str, Any] = {"sentFrom": view.sent_from, "tokens": view.tokens, "budget": view.budget}
    if view.searched:
        fields["searched"] = list(view.searched)
    if view.cited:
        fields["cited"] = [cited_fields(c) for c in view.cited]
    return fields


def cited_fields(c: Cited) -> dict[str, Any]:
    return {"collection": c.collection, "file": c.file, "first": c.first, "last": c.last}


def cited_of(raw: object) -> tuple[Cited, ...]:
    """Stored (or imported) cited passages; anything malformed is left out."""
    if not isinstance(raw, list):
        return ()
    return tuple(
        Cited(str(c["collection"]), str(c["file"]), int(c["first"]), int(c["last"]))
        for c in raw
        if isinstance(c, dict)
        and {"collection", "file", "first", "last"} <= c.keys()
        and isinstance(c["first"], int)
        and isinstance(c["last"], int)
    )


def _context(extra: dict[str, Any] | None) -> ContextView | None:
    view = (extra or {}).get(CONTEXT_KEY)
    if not isinstance(view, dict):
        return None
    searched = view.get("searched")
    names = tuple(str(n) for n in searched) if isinstance(searched, list) else ()
    sent_from, tokens, budget = int(view.get("sentFrom", 0)), int(view.get("tokens", 0)), int(view.get("budget", 0))
    return ContextView(sent_from, tokens, budget, names, cited_of(view.get("cited")))


def _summary(content: str, extra: dict[str, Any] | None, id: str | None) -> SummaryMessage | None:
    marker = (extra or {}).get(SUMMARY_KEY)
    if not isinstance(marker, dict):
        return None  # a plain system message: never part of a thread
    return SummaryMessage(content, int(marker.get("covers", 0)), id=id)


def _assistant(content: str, calls: tuple[ToolCall, ...], id: str | None, extra: dict[str, Any]) -> AssistantMessage:
    model = extra.get(MODEL_KEY)
    seconds = extra.get(THOUGHT_KEY)
    return AssistantMessage(
        content,
        calls,
        id=id,
        reasoning=extra.get("reasoning_content"),
        context=_context(extra),
        cut=bool(extra.get(CUT_KEY)),
        model=model if isinstance(model, str) else None,
        reasoning_seconds=float(seconds) if isinstance(seconds, (int, float)) else None,
    )


def to_domain(message: BaseMessage) -> Message | None:
    """The domain message, or None for types a thread never shows (system, …)."""
    if isinstance(message, SystemMessage):
        return _summary(flatten(message.content), message.additional_kwargs, message.id)
    if isinstance(message, HumanMessage):
        return UserMessage(flatten(message.content), id=message.id, attachments=_attachments(message.additional_kwargs))
    if isinstance(message, AIMessage):
        extra = message.additional_kwargs
        return _assistant(flatten(message.content), _calls(message.tool_calls, extra), message.id, extra)
    if isinstance(message, ToolMessage):
        return _tool_result(
            flatten(message.content),
            message.tool_call_id,
            message.name or "?",
            message.status,
            message.id,
            message.additional_kwargs,
        )
    return None


def from_fields(fields: dict[str, Any]) -> Message | None:
    """A message from the plain fields of a serialized LangChain message (see to_domain)."""
    kind = fields.get("type")
    content = flatten(fields.get("content"))
    if kind == "system":
        return _summary(content, fields.get("additional_kwargs"), fields.get("id"))
    if kind == "human":
        return UserMessage(content, id=fields.get("id"), attachments=_attachments(fields.get("additional_kwargs")))
    if kind in ("ai", "AIMessageChunk"):
        extra = fields.get("additional_kwargs") or {}
        return _assistant(content, _calls(fields.get("tool_calls") or [], extra), fields.get("id"), extra)
    if kind == "tool":
        return _tool_result(
            content,
            fields.get("tool_call_id") or "",
            fields.get("name") or "?",
            fields.get("status"),
            fields.get("id"),
            fields.get("additional_kwargs"),
        )
    return None


def to_domain_all(messages: Iterable[BaseMessage]) -> tuple[Message, ...]:
    return tuple(m for m in (to_domain(x) for x in messages) if m is not None)


class ConversionCache:
    """Domain views of stored messages, by message id. A thread's messages are re-read
    from the checkpoint before every model call; converting only the new ones keeps a long
    conversation's per-call cost flat. A message replaced under the same id is noticed by
    its content length and type."""

    def __init__(self, size: int = 20_000, threads: int = 256) -> None:
        self.size = size
        self.threads = threads
        self._items: OrderedDict[str, tuple[type, int, Message]] = OrderedDict()
        # thread id -> (the stored list last converted, its conversion): a thread's next list
        # starts with the same message objects, so only its new tail needs looking up
        self._last: OrderedDict[str, tuple[list[BaseMessage], tuple[Message, ...]]] = OrderedDict()

    def convert_thread(self, thread_id: str, messages: Sequence[BaseMessage]) -> tuple[Message, ...]:
        """As `convert`, reusing the conversion of the list last converted for the thread
        when the new list starts with the very same message objects."""
        last = self._last.get(thread_id)
        if last is not None:
            before, converted = last
            n = len(before)
            if len(messages) >= n and all(map(operator.is_, before, messages[:n])):
                out = converted + self.convert(messages[n:])
            else:
                out = self.convert(messages)
            self._last.move_to_end(thread_id)
        else:
            out = self.convert(messages)
        self._last[thread_id] = (list(messages), out)
        if len(self._last) > self.threads:
            self._last.popitem(last=False)
        return out

    def convert(self, messages: Iterable[BaseMessage]) -> tuple[Message, ...]:
        out: list[Message] = []
        for m in messages:
            key = m.id
            hit = self._items.get(key) if key else None
            if hit is not None and hit[0] is type(m) and hit[1] == len(m.content):
                out.append(hit[2])
                continue
            converted = to_domain(m)
            if converted is None:
                continue
            out.append(converted)
            if key:
                self._items[key] = (type(m), len(m.content), converted)
                if len(self._items) > self.size:
                    self._items.popitem(last=False)
        return tuple(out)


def to_langchain(message: Message, stored: bool = True) -> AnyMessage:
    """The LangChain message; `stored` False for a prompt (no bookkeeping fields, and no
    reasoning: a model is not sent its earlier thinking, which ChatOllama would send as
    `thinking` and which would cost the prompt tokens the budget never counted)."""
    if isinstance(message, UserMessage):
        if message.images and not stored:
            parts: list[str | dict[str, Any]] = [{"type": "text", "text": message.content}]
            parts += [
                {
                    "type": "image_url",
                    "image_url": {"url": f"data:{i.media_type};base64,{base64.b64encode(i.data).decode('ascii')}"},
                }
                for i in message.images
            ]
            return HumanMessage(parts, id=message.id)
        files = {FILES_KEY: [attachment_fields(a) for a in message.attachments]} if stored and message.attachments else {}
        return HumanMessage(message.content, id=message.id, additional_kwargs=files)
    if isinstance(message, SummaryMessage):
        return SystemMessage(message.content, id=message.id, additional_kwargs={SUMMARY_KEY: {"covers": message.covers}})
    if isinstance(message, AssistantMessage):
        extra: dict[str, Any] = {"reasoning_content": message.reasoning} if stored and message.reasoning else {}
        if stored and message.reasoning_seconds is not None:
            extra[THOUGHT_KEY] = message.reasoning_seconds
        if stored and message.model:
            extra[MODEL_KEY] = message.model
        if stored and message.context is not None:
            extra[CONTEXT_KEY] = _context_fields(message.context)
        if stored and message.cut:
            extra[CUT_KEY] = True
        model_ids = {c.id: c.model_id for c in message.tool_calls if c.model_id and c.model_id != c.id}
        if stored and model_ids:
            extra[MODEL_IDS_KEY] = model_ids
        calls = [{"id": c.id, "name": c.name, "args": c.args, "type": "tool_call"} for c in message.tool_calls]
        return AIMessage(message.content, tool_calls=calls, id=message.id, additional_kwargs=extra)
    return ToolMessage(
        message.content,
        tool_call_id=message.tool_call_id,
        name=message.name,
        status=message.status,
        id=message.id,
        additional_kwargs=tool_meta(message) if stored else {},
    )


def tool_meta(result: ToolResult) -> dict[str, Any]:
    """What a stored tool result keeps besides its content (shown on the page's call cards)."""
    meta: dict[str, Any] = {}
    if result.duration_ms is not None:
        meta["ms"] = result.duration_ms
    if result.skipped:
        meta["skipped"] = True
    return {TOOL_KEY: meta} if meta else {}


class PromptCache:
    """The model's input, the system prompt then the messages chosen for it, as LangChain messages.
    Building a LangChain message costs ~20 µs (pydantic): rebuilding a long thread before
    every model call made each turn slower than the one before. The domain messages of a
    thread are the same objects from call to call (ConversionCache), so each is converted
    once, found again by identity."""

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self._items: OrderedDict[int, tuple[Message, AnyMessage]] = OrderedDict()
        self._system: tuple[str, SystemMessage] | None = None
        self._prefix: PrefixMemo[Message, AnyMessage] = PrefixMemo()

    def prompt(self, system: str, messages: Sequence[Message]) -> list[AnyMessage]:
        if self._system is None or self._system[0] != system:
            self._system = (system, SystemMessage(system))
        reused = self._prefix.reuse(messages)
        out: list[AnyMessage] = [self._system[1], *reused]
        for m in messages[len(reused) :]:
            hit = self._items.get(id(m))
            if hit is None or hit[0] is not m:  # an id is reused only once its object is gone
                hit = (m, to_langchain(m, stored=False))
                self._items[id(m)] = hit
                if len(self._items) > self.size:
                    self._items.popitem(last=False)
            out.append(hit[1])
        self._prefix.remember(messages, out[1:])
        return out
