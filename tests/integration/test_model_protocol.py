"""Model servers that speak their protocol only in part (issue 35): what a real llama.cpp
server and Ollama-protocol proxies were seen sending, pinned with raw servers and the fakes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from adapters.ollama.model import OllamaModel
from adapters.openai.model import OpenAIModel
from domain.errors import ModelBadResponse
from domain.model import UserMessage
from ports.model import ModelPort
from tests.support.raw_server import replying, server


def ndjson(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def sse(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


async def outputs(model: ModelPort) -> list[Any]:
    try:
        return await asyncio.wait_for(_read(model), 20)
    finally:
        await model.aclose()  # type: ignore[attr-defined]


async def _read(model: ModelPort) -> list[Any]:
    return [o async for o in model.stream("sys", [UserMessage("hi")], [])]


NO_MESSAGE = (b'{"model":"qwen3","message":{"role":"assistant","content":"ok"},"done":false}\n'
              b'{"model":"qwen3","done":true,"done_reason":"stop"}\n')


@pytest.mark.parametrize(
    ("backend", "wire", "says"),
    [
        # pocket-o-llama ends its stream with a chunk that has no message
        ("ollama", ndjson(NO_MESSAGE), "sent a line that is not in Ollama's format (message: Field required)"),
        ("ollama", ndjson(b""), "closed its answer's stream without sending any part of it"),
        ("openai", sse(b"data: [DONE]\n\n"), "closed its answer's stream without sending any part of it"),
        ("openai", sse(b""), "closed its answer's stream without sending any part of it"),
    ],
)
async def test_a_malformed_or_empty_reply_names_the_server_the_cause_and_whether_a_resume_helps(
    backend: str, wire: bytes, says: str
) -> None:
    async with server(replying(wire)) as s:
        model: ModelPort = OllamaModel(s.url, "qwen3") if backend == "ollama" else OpenAIModel(f"{s.url}/v1", "local-model")
        with pytest.raises(ModelBadResponse) as caught:
            await outputs(model)
    message = caught.value.message
    assert s.url in message and says in message, message
    assert "A resume asks it again" in message
