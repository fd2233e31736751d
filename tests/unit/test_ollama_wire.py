"""ReusingChatOllama sends the very body stock ChatOllama sends, converting each prompt message
once; bodies are caught by an httpx MockTransport that answers a valid Ollama chat stream."""

from __future__ import annotations

import json
from typing import Any

import httpx
import ollama
import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_ollama import ChatOllama

from adapters.langchain.bounds import BoundedTransport
from adapters.langchain.transport import ModelTransport
from adapters.ollama import wire
from adapters.ollama.model import OllamaModel
from adapters.ollama.wire import ReusingChatOllama, WireCache
from domain.errors import AgentFailure, ModelUnavailable
from domain.model import UserMessage

FETCH = {
    "type": "function",
    "function": {
        "name": "fetch",
        "description": "Fetch a URL — «quoted»",
        "parameters": {
            "type": "object",
            "properties": {"url": {"type": "string", "description": "where"}, "page": {"$ref": "#/$defs/Page"}},
            "required": ["url"],
            "$defs": {"Page": {"type": "integer", "minimum": 1}},
        },
    },
}
ANSWER = [
    {"message": {"role": "assistant", "content": "", "thinking": "let me see"}, "done": False},
    {"message": {"role": "assistant", "content": "Héllo "}, "done": False},
    {
        "message": {
            "role": "assistant",
            "content": "world",
            "tool_calls": [{"function": {"name": "fetch", "arguments": {"url": "http://b", "page": 2}}}],
        },
        "done": False,
    },
    {
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 42,
        "eval_count": 7,
    },
]


def prompt() -> list[BaseMessage]:
    call = {"id": "c1", "name": "fetch", "args": {"url": "http://a", "n": 1.5, "deep": {"x": [1, None]}}, "type": "tool_call"}
    return [
        SystemMessage("You are terse."),
        HumanMessage('héllo ✓ "quoted" \n new line'),
        AIMessage("a text reply"),
        AIMessage("", tool_calls=[call]),
        ToolMessage("fetched", tool_call_id="c1", name="fetch", status="success"),
        ToolMessage("Error: refused", tool_call_id="c2", name="fetch", status="error"),
        AIMessage("so it is", additional_kwargs={"reasoning_content": "the page said so"}),
        HumanMessage(content=[{"type": "text", "text": "part one"}, "part two"]),
        HumanMessage(""),
        AIMessage(
            [{"type": "reasoning", "reasoning": "v1 thought"}, {"type": "text", "text": "v1 text"}],
            response_metadata={"output_version": "v1", "model_provider": "ollama"},
        ),
        HumanMessage("and now?"),
    ]


def ollama_stream(bodies: list[bytes], status: int = 200) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        bodies.append(request.content)
        if status != 200:
            return httpx.Response(status, json={"error": f"model 'm' failed with {status}"})
        if json.loads(request.content)["stream"] is False:
            return httpx.Response(
                200, json={"model": "m", **ANSWER[-1], "message": {"role": "assistant", "content": "Héllo world"}}
            )
        lines = [json.dumps({"model": "m", "created_at": "2026-12-03T00:00:00Z", **part}) for part in ANSWER]
        return httpx.Response(200, content="\n".join(lines).encode(), headers={"Content-Type": "application/x-ndjson"})

    return httpx.MockTransport(answer)


def chat(cls: type[ChatOllama], bodies: list[bytes], **fields: Any) -> ChatOllama:
    return cls(model="m", base_url="http://ollama.test", client_kwargs={"transport": ollama_stream(bodies)}, **fields)


async def stream(model: ChatOllama, messages: list[BaseMessage], tools: list[dict[str, Any]] | None) -> AIMessageChunk:
    runnable = model.bind_tools(tools) if tools else model
    full: AIMessageChunk | None = None
    async for chunk in runnable.astream(messages):
        assert isinstance(chunk, AIMessageChunk)
        full = chunk if full is None else full + chunk
    assert full is not None
    return full


def outcome(reply: AIMessageChunk) -> tuple[Any, ...]:
    calls = [(c["name"], c["args"]) for c in reply.tool_calls]
    return reply.content, calls, reply.usage_metadata, reply.additional_kwargs.get("reasoning_content")


@pytest.fixture
def conversions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many messages each stock conversion was given (ours and stock ChatOllama's)."""
    counts: list[int] = []
    original = ChatOllama._convert_messages_to_ollama_messages

    def spy(self: ChatOllama, messages: list[BaseMessage]) -> Any:
        counts.append(len(messages))
        return original(self, messages)

    monkeypatch.setattr(ChatOllama, "_convert_messages_to_ollama_messages", spy)
    return counts


@pytest.fixture
def encodings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The prompts ollama's AsyncClient.chat encoded (the stock path), by their length."""
    counts: list[int] = []
    original = ollama.AsyncClient.chat

    async def spy(self: ollama.AsyncClient, *args: Any, **kwargs: Any) -> Any:
        counts.append(len(kwargs.get("messages") or []))
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(ollama.AsyncClient, "chat", spy)
    return counts


@pytest.mark.parametrize("tools", [None, [FETCH]], ids=["no-tools", "tools"])
@pytest.mark.parametrize("think", [False, True], ids=["no-think", "think"])
@pytest.mark.parametrize("num_ctx", [None, 8192], ids=["server-ctx", "num-ctx"])
async def test_our_body_and_streamed_reply_equal_stock_chat_ollamas(
    tools: list[dict[str, Any]] | None, think: bool, num_ctx: int | None
) -> None:
    stock_bodies: list[bytes] = []
    our_bodies: list[bytes] = []
    messages = prompt()
    stock = await stream(chat(ChatOllama, stock_bodies, reasoning=think, num_ctx=num_ctx), messages, tools)
    ours = await stream(chat(ReusingChatOllama, our_bodies, reasoning=think, num_ctx=num_ctx), messages, tools)
    assert json.loads(our_bodies[0]) == json.loads(stock_bodies[0])
    assert our_bodies == stock_bodies  # byte for byte, as httpx encodes the stock json=
    assert outcome(ours) == outcome(stock)
    assert ours.content == "Héllo world" and ours.usage_metadata is not None


async def test_a_second_call_with_the_same_messages_converts_none_again(conversions: list[int], encodings: list[int]) -> None:
    stock_bodies: list[bytes] = []
    our_bodies: list[bytes] = []
    messages = prompt()
    ours = chat(ReusingChatOllama, our_bodies)
    await stream(ours, messages, [FETCH])
    assert conversions == [len(messages)]
    again = await stream(ours, list(messages), [FETCH])
    assert conversions == [len(messages)]  # nothing converted again
    assert encodings == []  # nor encoded by ollama's chat(): our body went out
    await stream(chat(ChatOllama, stock_bodies), messages, [FETCH])
    assert our_bodies[1] == stock_bodies[0]
    assert again.content == "Héllo world"


async def test_a_message_not_seen_before_is_converted_once(conversions: list[int]) -> None:
    bodies: list[bytes] = []
    messages = prompt()
    ours = chat(ReusingChatOllama, bodies)
    await stream(ours, messages, None)
    longer = [*messages, HumanMessage("one more")]
    await stream(ours, longer, None)
    await stream(ours, longer, None)
    assert conversions == [len(messages), 1]
    assert json.loads(bodies[1])["messages"][-1] == {"role": "user", "content": "one more"}


async def test_clients_sharing_a_cache_convert_a_message_once(conversions: list[int]) -> None:
    bodies: list[bytes] = []
    cache = WireCache()
    messages = prompt()
    await stream(chat(ReusingChatOllama, bodies, wire_cache=cache), messages, None)
    await stream(chat(ReusingChatOllama, bodies, wire_cache=cache), messages, None)
    assert conversions == [len(messages)] and bodies[0] == bodies[1]


def test_the_cache_keeps_its_size_dropping_the_least_recently_used() -> None:
    cache = WireCache(size=2)
    a, b, c = HumanMessage("a"), HumanMessage("b"), HumanMessage("c")
    seen: list[str] = []

    def stock(messages: list[BaseMessage]) -> list[dict[str, Any]]:
        seen.extend(str(m.content) for m in messages)
        return [{"role": "user", "content": m.content, "images": []} for m in messages]

    cache.convert([a, b], stock)
    cache.convert([a], stock)  # a is now the most recently used
    cache.convert([c], stock)  # drops b
    cache.convert([c, b, a], stock)  # (not led by [a, b]: the prefix memo has nothing to give)
    assert seen == ["a", "b", "c", "b"]
    assert [w.wire for w in cache.convert([c], stock)] == ['{"role":"user","content":"c"}']


async def test_a_non_streaming_call_takes_the_stock_path_with_the_same_body(encodings: list[int]) -> None:
    stock_bodies: list[bytes] = []
    our_bodies: list[bytes] = []
    messages = prompt()
    # ainvoke streams too: ask for a single response as a caller may
    ours = await chat(ReusingChatOllama, our_bodies).ainvoke(messages, stream=False)
    await chat(ChatOllama, stock_bodies).ainvoke(messages, stream=False)
    assert json.loads(our_bodies[0]) == json.loads(stock_bodies[0]) and json.loads(our_bodies[0])["stream"] is False
    assert ours.content == "Héllo world" and encodings == [len(messages)] * 2


@pytest.mark.parametrize("status", [404, 500])
async def test_an_error_status_is_ollamas_response_error_with_the_status(status: int) -> None:
    bodies: list[bytes] = []
    ours = ReusingChatOllama(model="m", client_kwargs={"transport": ollama_stream(bodies, status)})
    with pytest.raises(ollama.ResponseError) as raised:
        await stream(ours, prompt(), None)
    assert raised.value.status_code == status and "failed with" in raised.value.error
    assert json.loads(bodies[0])["model"] == "m"


def mocked_model(status: int) -> OllamaModel:
    class MockedOllamaModel(OllamaModel):
        def _client(self, think: bool, timeout: float, context: int | None) -> ReusingChatOllama:
            transport = ollama_stream([], status)
            return ReusingChatOllama(model=self.model, client_kwargs={"transport": transport}, wire_cache=self._wire)

    return MockedOllamaModel("http://ollama.test", "m")


@pytest.mark.parametrize(
    ("status", "error"), [(404, ModelUnavailable), (500, AgentFailure)], ids=["missing-model", "server-error"]
)
async def test_the_ollama_model_still_maps_error_statuses_to_domain_errors(status: int, error: type[Exception]) -> None:
    model = mocked_model(status)
    with pytest.raises(error):
        _ = [o async for o in model.stream("sys", [UserMessage("hi")], [])]


def test_the_ollama_model_builds_its_client_on_reusing_chat_ollama_over_the_httptools_transport() -> None:
    model = OllamaModel("http://127.0.0.1:1", "qwen3")
    assert isinstance(model._chat, ReusingChatOllama) and model._chat.wire_cache is model._wire
    assert model._chat._async_client._client._transport is model._transport
    assert isinstance(model._transport, BoundedTransport) and isinstance(model._transport.inner, ModelTransport)


def test_the_same_bound_tool_list_is_encoded_once_and_a_changed_one_again(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = WireCache()
    encoded: list[int] = []
    real = wire._tools_wire

    def counting(tools: Any) -> str:
        encoded.append(len(tools))
        return real(tools)

    monkeypatch.setattr(wire, "_tools_wire", counting)
    bound = [FETCH]
    first = cache.tools(bound)
    assert cache.tools(bound) == first and encoded == [1]
    other = [FETCH, {**FETCH, "function": {**FETCH["function"], "name": "fetch_two"}}]
    assert '"fetch_two"' in cache.tools(other) and encoded == [1, 2]
    assert cache.tools(bound) == first and encoded == [1, 2]
