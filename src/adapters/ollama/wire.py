"""ChatOllama that builds each prompt message's request form once, not on every call.

Why: a turn's cost must stay flat as a thread grows (issue 17: turn 200 at most 1.3x turn 1),
yet the stock request building redoes the whole prompt on every model call. Profiled on a
200-turn thread (400 messages) against a fake Ollama answering at once:
- ollama's `_copy_messages` (`Message.model_validate` of every message): ~2.8 ms per call;
- ChatOllama's `_convert_messages_to_ollama_messages`: ~1.0 ms;
- `ChatRequest(...).model_dump(exclude_none=True)` and httpx's `json.dumps` of it: ~0.8 ms.
A prompt's LangChain messages are the same objects from call to call (PromptCache), so each
one's converted form and JSON fragment are kept, found again by identity, and the body is the
request without its messages (dumped by ollama's own `ChatRequest`) with the fragments spliced
in: the same JSON object the stock path sends, byte for byte.

Everything else stays ChatOllama's and ollama's: streaming, NDJSON parsing, callbacks, usage,
`ResponseError`s, the transport. This relies on internals of the pinned langchain-ollama
(1.1.0: `_chat_params`, `_convert_messages_to_ollama_messages`, `_acreate_chat_stream`) and
ollama (0.6.3: `AsyncClient._request`, `_copy_messages`, `_copy_tools`, `ChatRequest`) and on
httpx's `json=` encoding; tests/unit/test_ollama_wire.py compares our bodies with the stock
ones and fails when an upgrade changes any of them. Anything unusual (a non-streaming call,
extra request fields, a message the library cannot encode on its own, images) takes the stock
path. Prompt messages are taken as immutable once sent, as PromptCache's are."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, cast

from langchain_core.messages import BaseMessage
from langchain_ollama import ChatOllama
from ollama import ChatResponse, Message
from ollama._client import _copy_messages, _copy_tools
from ollama._types import ChatRequest
from pydantic import Field

from adapters.langchain.prefix import PrefixMemo

# the keyword arguments of AsyncClient.chat: any other request field takes the stock path
CHAT_FIELDS = frozenset(
    {"model", "messages", "tools", "stream", "think", "logprobs", "top_logprobs", "format", "options", "keep_alive"}
)
JSON = {"Content-Type": "application/json"}


def dumps(value: Any) -> str:
    """JSON text as httpx encodes a `json=` body (httpx/_content.py `encode_json`)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class WireMessage(dict[str, Any]):
    """ChatOllama's converted message, with its JSON as ollama's client would send it (None
    when the library cannot encode it alone: the stock path then raises or sends it)."""

    __slots__ = ("wire",)

    def __init__(self, converted: Mapping[str, Any]) -> None:
        super().__init__(converted)
        self.wire = _fragment(converted)


def _fragment(converted: Mapping[str, Any]) -> str | None:
    if converted.get("images"):
        return None  # an image path is read when the request is encoded: never freeze it
    try:
        request = ChatRequest(model="m", messages=list(_copy_messages([converted])))
        return dumps(request.model_dump(exclude_none=True)["messages"][0])
    except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        return None


def _tools_wire(tools: Sequence[Any]) -> str:
    request = ChatRequest(model="m", tools=list(_copy_tools(tools)))
    return dumps(request.model_dump(exclude_none=True)["tools"])


class WireCache:
    """Converted prompt messages and the tools' request form, by object identity (each held,
    so its id is not reused). LRU, bounded; one per model."""

    def __init__(self, size: int = 10_000, tools: int = 64) -> None:
        self.size = size
        self.tools_size = tools
        self._messages: OrderedDict[int, tuple[BaseMessage, WireMessage]] = OrderedDict()
        self._tools: OrderedDict[int, tuple[Sequence[Any], str]] = OrderedDict()
        self._lock = threading.Lock()  # asyncio needs none; a sync caller in threads might
        # a prompt's leading messages as the last prompt of its thread had them (after the
        # system message, which threads share)
        self._prefix: PrefixMemo[BaseMessage, WireMessage] = PrefixMemo(key_at=1)

    def convert(self, messages: Sequence[BaseMessage], stock: Callable[[list[BaseMessage]], Sequence[Any]]) -> list[WireMessage]:
        """The messages in ChatOllama's form, `stock` converting only those not seen before
        (it converts each message on its own, so a batch of the new ones is the same)."""
        reused = self._prefix.reuse(messages)
        with self._lock:
            out: list[WireMessage | None] = list(reused)
            new: list[BaseMessage] = []
            for m in messages[len(reused) :]:
                hit = self._messages.get(id(m))
                if hit is not None and hit[0] is m:
                    self._messages.move_to_end(id(m))
                    out.append(hit[1])
                else:
                    out.append(None)
                    new.append(m)
            if new:
                converted = iter([WireMessage(c) for c in stock(new)])
                for i, m in enumerate(messages):
                    if out[i] is None:
                        out[i] = next(converted)
                        self._messages[id(m)] = (m, out[i])  # type: ignore[assignment]
                while len(self._messages) > self.size:
                    self._messages.popitem(last=False)
        self._prefix.remember(messages, cast("list[WireMessage]", out))
        return cast("list[WireMessage]", out)

    def tools(self, tools: Sequence[Any]) -> str:
        """The tools' request form, kept by the bound list's identity: a lane's client is
        bound once while the toolbox lists the same tools (adapters.langchain.streaming)."""
        hit = self._tools.get(id(tools))
        if hit is not None and hit[0] is tools:
            return hit[1]
        wire = _tools_wire(tools)
        with self._lock:
            self._tools[id(tools)] = (tools, wire)
            while len(self._tools) > self.tools_size:
                self._tools.popitem(last=False)
        return wire


class ReusingChatOllama(ChatOllama):
    """ChatOllama whose request body reuses each prompt message's encoding (module docstring)."""

    wire_cache: WireCache = Field(default_factory=WireCache, exclude=True)

    def _convert_messages_to_ollama_messages(self, messages: list[BaseMessage]) -> Sequence[Message]:
        stock = super()._convert_messages_to_ollama_messages
        return cast("Sequence[Message]", self.wire_cache.convert(messages, stock))

    def _body(self, params: dict[str, Any]) -> bytes | None:
        """The request body the stock path would send, or None where it must build it."""
        messages = params["messages"]
        if not params["stream"] or not CHAT_FIELDS.issuperset(params):
            return None
        if not all(isinstance(m, WireMessage) and m.wire is not None for m in messages):
            return None
        fields = {k: v for k, v in params.items() if k not in ("messages", "tools")}
        # empty lists keep both keys where ChatRequest puts them; their text is spliced in below
        head = ChatRequest(messages=[], tools=[], **fields).model_dump(exclude_none=True)
        tools = params.get("tools")
        parts = []
        for key, value in head.items():
            if key == "messages":
                text = "[" + ",".join(m.wire for m in messages) + "]"
            elif key == "tools" and tools:
                text = self.wire_cache.tools(tools)
            else:
                text = dumps(value)
            parts.append(f"{dumps(key)}:{text}")
        return ("{" + ",".join(parts) + "}").encode()

    async def _acreate_chat_stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Mapping[str, Any] | str]:
        body = self._body(self._chat_params(messages, stop, **kwargs)) if self._async_client else None
        if body is None:
            async for part in super()._acreate_chat_stream(messages, stop, **kwargs):
                yield part
            return
        stream = await self._async_client._request(ChatResponse, "POST", "/api/chat", content=body, headers=JSON, stream=True)
        async for response in stream:
            yield cast(Any, response)  # a ChatResponse, as the stock path yields (it reads like a Mapping)
