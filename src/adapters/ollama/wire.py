"""Ollama's /api/chat spoken directly: domain messages to the wire's JSON, its NDJSON stream
back to ModelOutputs, on one shared httpx client.

Why not ChatOllama: at 64 conversations the model call was the largest share of a turn's
CPU, and most of it was LangChain's streaming machinery (callbacks, message chunks merged
one by one, pydantic models) and the ollama client's own pydantic types, around one small
JSON object per token. The wire format is small and stable: what is sent here is what
langchain-ollama sent (same roles, tool-call and thinking fields, options)."""

from __future__ import annotations

import json
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx

from domain.model import AssistantMessage, Message, SummaryMessage, ToolCall, ToolResult, UserMessage
from ports.model import ModelOutput, TextChunk, Usage
from ports.tools import ToolSpec


class OllamaError(Exception):
    """Raised when Ollama answers with an error: an HTTP status, or an error line mid-stream."""

    def __init__(self, message: str, status: int = -1) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def tool_schema(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": dict(spec.parameters) or {"type": "object", "properties": {}},
        },
    }


def to_wire(message: Message) -> dict[str, Any]:
    """One message as /api/chat takes it (a summary goes as a system message)."""
    if isinstance(message, UserMessage):
        return {"role": "user", "content": message.content}
    if isinstance(message, SummaryMessage):
        return {"role": "system", "content": message.content}
    if isinstance(message, AssistantMessage):
        out: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            out["tool_calls"] = [
                {"type": "function", "id": c.id, "function": {"name": c.name, "arguments": c.args}}
                for c in message.tool_calls
            ]
        if message.reasoning:
            out["thinking"] = message.reasoning
        return out
    assert isinstance(message, ToolResult)
    return {"role": "tool", "content": message.content, "tool_call_id": message.tool_call_id}


class WirePrompts:
    """The wire form of a thread's messages, each built once: the domain messages of a
    thread are the same objects from call to call, so they are found again by identity
    (an id is reused only once its object is gone, hence the identity check)."""

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self._items: OrderedDict[int, tuple[Message, dict[str, Any]]] = OrderedDict()

    def messages(self, system: str, messages: Sequence[Message]) -> list[dict[str, Any]]:
        out = [{"role": "system", "content": system}]
        for m in messages:
            hit = self._items.get(id(m))
            if hit is None or hit[0] is not m:
                hit = (m, to_wire(m))
                self._items[id(m)] = hit
                if len(self._items) > self.size:
                    self._items.popitem(last=False)
            out.append(hit[1])
        return out


def _calls(raw: Any) -> list[ToolCall]:
    out = []
    for call in raw or []:
        fn = call.get("function") or {}
        args = fn.get("arguments")
        if isinstance(args, str):  # some models send the arguments as a JSON string
            try:
                args = json.loads(args)
            except ValueError:
                args = {}
        # Ollama's ids (when it sends any) are not unique across calls: a fresh one each
        out.append(ToolCall(str(uuid.uuid4()), str(fn.get("name") or ""), dict(args or {})))
    return out


class OllamaChat:
    """Streams one chat call. Errors: OllamaError, and httpx's transport errors as raised."""

    def __init__(self, client: httpx.AsyncClient, base_url: str, model: str, think: bool, context: int | None) -> None:
        self.client = client
        self.url = f"{base_url}/api/chat"
        self.model = model
        self.think = think
        self.options = {"num_ctx": context} if context else {}
        self.prompts = WirePrompts()

    def body(self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": self.prompts.messages(system, messages),
            "stream": True,
            "think": self.think,
            "options": self.options,
        }
        if tools:
            body["tools"] = [tool_schema(t) for t in tools]
        return body

    async def stream(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[ModelOutput]:
        text: list[str] = []
        thinking: list[str] = []
        calls: list[ToolCall] = []
        usage: Usage | None = None
        async with self.client.stream("POST", self.url, json=self.body(system, messages, tools)) as response:
            if response.status_code >= 400:
                await response.aread()
                raise OllamaError(_error_text(response), response.status_code)
            async for line in response.aiter_lines():
                if not line:
                    continue
                part = json.loads(line)
                if "error" in part:
                    raise OllamaError(str(part["error"]), response.status_code)
                message = part.get("message") or {}
                if message.get("thinking"):
                    thinking.append(message["thinking"])
                if message.get("tool_calls"):
                    calls += _calls(message["tool_calls"])
                chunk = message.get("content")
                if chunk:
                    text.append(chunk)
                    yield TextChunk(chunk)
                if part.get("done") and part.get("prompt_eval_count"):
                    usage = Usage(int(part["prompt_eval_count"]), int(part.get("eval_count") or 0))
        if usage is not None:
            yield usage
        yield AssistantMessage("".join(text), tuple(calls), id=f"run-{uuid.uuid4()}", reasoning="".join(thinking) or None)


def _error_text(response: httpx.Response) -> str:
    try:
        return str(response.json()["error"])
    except (ValueError, KeyError, TypeError):
        return response.text or f"HTTP {response.status_code}"
