"""The Ollama adapter (real ChatOllama) against a fake Ollama speaking the wire protocol."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from adapters.ollama.model import OllamaModel
from domain.errors import ModelUnavailable, ModelUnreachable
from domain.model import AssistantMessage, UserMessage
from ports.model import TextChunk
from ports.tools import ToolSpec
from tests.support.fake_ollama import fake_ollama

FETCH = ToolSpec("fetch__fetch", "Fetch a URL", {"type": "object", "properties": {"url": {"type": "string"}}})


async def collect(model: OllamaModel, tools: list[ToolSpec] | None = None, close: bool = True) -> list[Any]:
    try:
        return [o async for o in model.stream("sys", [UserMessage("hi")], tools or [])]
    finally:
        if close:
            await model.aclose()  # its connection pool


async def test_tokens_stream_then_one_reply() -> None:
    with fake_ollama([{"text": "Hello brave new world"}]) as fake:
        out = await collect(OllamaModel(fake.url, "qwen3"))
    chunks = [o.text for o in out if isinstance(o, TextChunk)]
    assert chunks == ["Hello ", "brave ", "new ", "world"]
    assert isinstance(out[-1], AssistantMessage) and out[-1].content == "Hello brave new world"
    request = fake.requests[0]
    assert request["stream"] is True and request["messages"][0] == {"role": "system", "content": "sys"}


async def test_tool_calls_arrive_with_unique_ids_and_the_tools_are_offered() -> None:
    calls = [("fetch__fetch", {"url": "http://a"}), ("fetch__fetch", {"url": "http://b"})]
    with fake_ollama([{"tool_calls": calls}]) as fake:
        out = await collect(OllamaModel(fake.url, "qwen3"), [FETCH])
    reply = out[-1]
    assert isinstance(reply, AssistantMessage)
    assert [(c.name, c.args) for c in reply.tool_calls] == calls
    assert len({c.id for c in reply.tool_calls}) == 2 and all(c.id for c in reply.tool_calls)
    assert fake.requests[0]["tools"][0]["function"]["name"] == "fetch__fetch"


async def test_an_unknown_model_is_model_unavailable() -> None:
    with fake_ollama() as fake:
        with pytest.raises(ModelUnavailable):
            await collect(OllamaModel(fake.url, "nope"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_server_that_is_down_is_model_unreachable() -> None:
    with pytest.raises(ModelUnreachable, match="unreachable"):
        await collect(OllamaModel(f"http://127.0.0.1:{_free_port()}", "qwen3"))


async def test_a_stalled_server_hits_the_timeout() -> None:
    with fake_ollama([{"stall": 3, "text": "late"}]) as fake:
        with pytest.raises(ModelUnreachable, match="timed out"):
            await collect(OllamaModel(fake.url, "qwen3", timeout=0.5))


async def test_readiness_matches_the_model_name_as_a_substring() -> None:
    with fake_ollama(models=("qwen3:8b",)) as fake:
        ready = await OllamaModel(fake.url, "qwen3").check()
        assert (ready.ok, ready.reason, ready.url) == (True, "ok", f"{fake.url}/api/tags")
        missing = await OllamaModel(fake.url, "llama").check()
        assert not missing.ok and missing.reason == 'Ollama model "llama" not available'
        assert "`ollama pull llama`" in missing.fix
    url = f"http://127.0.0.1:{_free_port()}"
    down = await OllamaModel(url, "qwen3").check()
    assert (down.ok, down.reason, down.url) == (False, "Failed to connect to Ollama", f"{url}/api/tags")
    assert "`ollama serve`" in down.fix and "OLLAMA_HOST" in down.fix and "`make demo`" in down.fix


async def test_run_errors_name_the_host_and_the_fix() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(ModelUnreachable) as unreachable:
        await collect(OllamaModel(url, "qwen3"))
    message = unreachable.value.message
    assert f"Ollama at {url} is unreachable" in message
    assert message.endswith("start Ollama (`ollama serve`) or set OLLAMA_HOST, or run `make demo`")
    with fake_ollama(models=("qwen3:8b",)) as fake:
        with pytest.raises(ModelUnavailable) as missing:
            await collect(OllamaModel(fake.url, "llama"))
    assert "pull it first (`ollama pull llama`)" in missing.value.message


async def test_many_calls_at_once_keep_their_connections_for_the_next_ones() -> None:
    """Past httpx's 20 idle connections, each call that ended closed its connection and the
    next one connected again."""
    with fake_ollama() as fake:
        fake.latency = 0.3  # the calls of a wave overlap
        model = OllamaModel(fake.url, "qwen3")
        for _ in range(3):
            await asyncio.gather(*(collect(model, close=False) for _ in range(40)))
        await model.aclose()
        assert fake.server is not None
        assert fake.server.accepted <= 45  # one per call of the first wave, then reused


async def test_stopping_the_iteration_closes_the_connection_so_ollama_stops_generating() -> None:
    words = " ".join(f"w{i}" for i in range(40))
    with fake_ollama([{"text": words, "token_delay": 0.05}]) as fake:
        model = OllamaModel(fake.url, "qwen3")
        stream = model.stream("sys", [UserMessage("hi")], [])
        first = await anext(stream)
        assert isinstance(first, TextChunk)
        await stream.aclose()  # what cancelling a run does to its model call
        for _ in range(100):  # the fake notices at its next write
            if fake.dropped:
                break
            await asyncio.sleep(0.02)
        await model.aclose()
        assert fake.dropped == 1


async def test_closing_the_model_closes_its_connection_pool() -> None:
    with fake_ollama() as fake:
        model = OllamaModel(fake.url, "qwen3")
        await collect(model, close=False)
        pool = model._transport.inner  # the fast transport, under the bounds
        [idle] = [conn for conns in pool.idle.values() for conn in conns]
        assert not idle.closed
        await model.aclose()
        assert idle.closed and not pool.idle
