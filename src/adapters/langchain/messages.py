"""Translation between LangChain message objects and the domain's messages."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from domain.model import AssistantMessage, Message, ToolCall, ToolResult, UserMessage


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


def to_domain(message: BaseMessage) -> Message | None:
    """The domain message, or None for types a thread never shows (system, …)."""
    if isinstance(message, HumanMessage):
        return UserMessage(flatten(message.content), id=message.id)
    if isinstance(message, AIMessage):
        calls = tuple(
            ToolCall(c.get("id") or "", c["name"], dict(c.get("args") or {})) for c in message.tool_calls
        )
        reasoning = message.additional_kwargs.get("reasoning_content")
        return AssistantMessage(flatten(message.content), calls, id=message.id, reasoning=reasoning)
    if isinstance(message, ToolMessage):
        status: Literal["success", "error"] = "error" if message.status == "error" else "success"
        return ToolResult(
            flatten(message.content), message.tool_call_id, message.name or "?", status, id=message.id
        )
    return None


def from_fields(fields: dict[str, Any]) -> Message | None:
    """A message from the plain fields of a serialized LangChain message (see to_domain)."""
    kind = fields.get("type")
    content = flatten(fields.get("content"))
    if kind == "human":
        return UserMessage(content, id=fields.get("id"))
    if kind in ("ai", "AIMessageChunk"):
        calls = tuple(
            ToolCall(c.get("id") or "", c["name"], dict(c.get("args") or {}))
            for c in fields.get("tool_calls") or []
            if isinstance(c, dict) and "name" in c
        )
        reasoning = (fields.get("additional_kwargs") or {}).get("reasoning_content")
        return AssistantMessage(content, calls, id=fields.get("id"), reasoning=reasoning)
    if kind == "tool":
        status: Literal["success", "error"] = "error" if fields.get("status") == "error" else "success"
        return ToolResult(content, fields.get("tool_call_id") or "", fields.get("name") or "?", status, id=fields.get("id"))
    return None


def to_domain_all(messages: Iterable[BaseMessage]) -> tuple[Message, ...]:
    return tuple(m for m in (to_domain(x) for x in messages) if m is not None)


class ConversionCache:
    """Domain views of stored messages, by message id. A thread's messages are re-read
    from the checkpoint before every model call; converting only the new ones keeps a long
    conversation's per-call cost flat. A message replaced under the same id is noticed by
    its content length and type."""

    def __init__(self, size: int = 20_000) -> None:
        self.size = size
        self._items: OrderedDict[str, tuple[type, int, Message]] = OrderedDict()

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


def to_langchain(message: Message) -> AnyMessage:
    if isinstance(message, UserMessage):
        return HumanMessage(message.content, id=message.id)
    if isinstance(message, AssistantMessage):
        extra = {"reasoning_content": message.reasoning} if message.reasoning else {}
        calls = [{"id": c.id, "name": c.name, "args": c.args, "type": "tool_call"} for c in message.tool_calls]
        return AIMessage(message.content, tool_calls=calls, id=message.id, additional_kwargs=extra)
    return ToolMessage(
        message.content,
        tool_call_id=message.tool_call_id,
        name=message.name,
        status=message.status,
        id=message.id,
    )


class PromptCache:
    """The model's input, the system prompt then the whole thread, as LangChain messages.
    Building a LangChain message costs ~20 µs (pydantic): rebuilding a long thread before
    every model call made each turn slower than the one before. The domain messages of a
    thread are the same objects from call to call (ConversionCache), so each is converted
    once, found again by identity."""

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self._items: OrderedDict[int, tuple[Message, AnyMessage]] = OrderedDict()
        self._system: tuple[str, SystemMessage] | None = None

    def prompt(self, system: str, messages: Sequence[Message]) -> list[AnyMessage]:
        if self._system is None or self._system[0] != system:
            self._system = (system, SystemMessage(system))
        out: list[AnyMessage] = [self._system[1]]
        for m in messages:
            hit = self._items.get(id(m))
            if hit is None or hit[0] is not m:  # an id is reused only once its object is gone
                hit = (m, to_langchain(m))
                self._items[id(m)] = hit
                if len(self._items) > self.size:
                    self._items.popitem(last=False)
            out.append(hit[1])
        return out
