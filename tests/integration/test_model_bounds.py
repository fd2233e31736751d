"""Nothing a model server sends is unbounded (issue 34 item 4): hostile servers on raw sockets
against the model adapters, on the httptools transport and on httpx's own (MODEL_TRANSPORT).
Each case fails the call with a MODEL_* code whose message names the server, and soon."""

from __future__ import annotations

import asyncio
import gzip
import json
import time

import httpx
import pytest

from adapters.langchain.bounds import INFLATED_MAX, LINE_MAX, STEP, ResponseRefused
from adapters.langchain.client import model_transport
from adapters.ollama.model import OllamaModel
from adapters.openai.model import OpenAIModel
from domain.errors import ErrorCode, ModelBadResponse, ModelUnreachable, SophosError
from domain.model import UserMessage
from ports.model import TextChunk
from tests.support.raw_server import Handler, replying, request_head, server

MODES = ["fast", "httpx"]
DONE = b'{"model":"qwen3","message":{"role":"assistant","content":"ok"},"done":true}\n'


@pytest.fixture(autouse=True)
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


def ndjson(body: bytes, extra: bytes = b"") -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n" % len(body)
    return head + extra + b"\r\n" + body


async def ollama_call(handler: Handler, mode: str, timeout: float = 10) -> tuple[str, str]:
    """The answer of one Ollama call against the server, and the server's URL."""
    async with server(handler) as s:
        model = OllamaModel(s.url, "qwen3", timeout=timeout, transport=mode)
        try:
            out = [o.text async for o in model.stream("sys", [UserMessage("hi")], []) if isinstance(o, TextChunk)]
        finally:
            await model.aclose()
    return "".join(out), s.url


async def refused(handler: Handler, mode: str, error: type[SophosError] = ModelBadResponse, timeout: float = 10) -> str:
    """The message of the error the call fails with; it names the model server."""
    url = ""

    async def call() -> None:
        nonlocal url
        async with server(handler) as s:
            url = s.url
            model = OllamaModel(s.url, "qwen3", timeout=timeout, transport=mode)
            try:
                _ = [o async for o in model.stream("sys", [UserMessage("hi")], [])]
            finally:
                await model.aclose()

    with pytest.raises(error) as caught:
        await asyncio.wait_for(call(), 30)
    assert caught.value.code.value.startswith("MODEL_") and url in caught.value.message
    return caught.value.message


async def test_a_well_formed_answer_still_comes_through_on_both_transports() -> None:
    for mode in MODES:
        assert (await ollama_call(replying(ndjson(DONE)), mode))[0] == "ok"


async def test_a_response_head_over_64_kib_is_refused() -> None:
    wire = ndjson(DONE, b"X-Pad: " + b"a" * 200_000 + b"\r\n")
    message = await refused(replying(wire, hold=True), "fast")
    assert "head over 64 KiB" in message
    # httpx's own (h11) stops at 16 KiB: a MODEL_* error too
    await refused(replying(wire, hold=True), "httpx", error=SophosError)


@pytest.mark.parametrize("mode", MODES)
async def test_a_head_sent_a_byte_at_a_time_fails_within_the_model_timeout(mode: str) -> None:
    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await request_head(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        for _ in range(100):  # each byte well within the per-read timeout
            await asyncio.sleep(0.2)
            writer.write(b"a")
            await writer.drain()

    started = time.monotonic()
    message = await refused(trickle, mode, error=ModelUnreachable, timeout=1)
    assert "timed out after 1 s" in message and time.monotonic() - started < 3


@pytest.mark.parametrize("mode", MODES)
async def test_a_streamed_line_over_the_cap_is_refused(mode: str) -> None:
    line = json.dumps({"model": "qwen3", "message": {"role": "assistant", "content": "a" * (LINE_MAX + 1)}, "done": True})
    message = await refused(replying(ndjson(line.encode() + b"\n"), hold=True), mode)
    assert f"line longer than {LINE_MAX >> 20} MiB" in message


@pytest.mark.parametrize("mode", MODES)
async def test_a_gzip_bomb_is_inflated_in_bounded_steps_and_refused(mode: str) -> None:
    bomb = gzip.compress(b"a" * (INFLATED_MAX + (1 << 20)), 9)  # ~65 KiB on the wire
    wire = ndjson(bomb, b"Content-Encoding: gzip\r\n")
    await refused(replying(wire, hold=True), mode)
    async with server(replying(wire, hold=True)) as s:
        async with httpx.AsyncClient(transport=model_transport(s.url, mode), base_url=s.url) as client:
            async with client.stream("GET", "/") as r:
                largest = 0
                with pytest.raises(ResponseRefused, match="inflating past 64 MiB|line longer"):
                    async for chunk in r.aiter_raw():
                        largest = max(largest, len(chunk))
    assert largest <= STEP


async def test_the_inflated_size_is_capped_even_in_short_lines() -> None:
    bomb = gzip.compress(b"{}\n" * ((INFLATED_MAX >> 1) + 1), 9)
    async with server(replying(ndjson(bomb, b"Content-Encoding: gzip\r\n"), hold=True)) as s:
        async with httpx.AsyncClient(transport=model_transport(s.url), base_url=s.url) as client:
            with pytest.raises(ResponseRefused, match="inflating past 64 MiB"):
                await client.get("/")


async def test_a_gzip_bomb_on_the_readiness_probe_is_refused_not_read() -> None:
    # a list naming the model, padded to 64 MiB: read whole, it would say "ready" after +64 MiB
    bomb = gzip.compress(b'{"models":[{"name":"qwen3:latest"}]' + b" " * (64 << 20) + b"}", 9)
    async with server(replying(ndjson(bomb, b"Content-Encoding: gzip\r\n"), hold=True)) as s:
        model = OllamaModel(s.url, "qwen3")
        try:
            ready = await model.check()
        finally:
            await model.aclose()
    assert not ready.ok


@pytest.mark.parametrize("mode", MODES)
async def test_a_blank_line_between_ndjson_lines_is_a_clear_model_error(mode: str) -> None:
    first = b'{"model":"qwen3","message":{"role":"assistant","content":"o"},"done":false}\n'
    message = await refused(replying(ndjson(first + b"\n" + DONE), hold=True), mode)
    assert "not JSON" in message


async def test_an_openai_compatible_server_s_bomb_is_a_model_bad_response() -> None:
    event = gzip.compress(b"data: " + b"a" * (LINE_MAX + 1) + b"\n\n", 9)
    wire = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
    wire += b"Content-Length: %d\r\n\r\n%s" % (len(event), event)
    async with server(replying(wire, hold=True)) as s:
        model = OpenAIModel(f"{s.url}/v1", "m", timeout=10)
        try:
            with pytest.raises(ModelBadResponse) as caught:
                _ = [o async for o in model.stream("sys", [UserMessage("hi")], [])]
        finally:
            await model.aclose()
    assert caught.value.code is ErrorCode.MODEL_BAD_RESPONSE and s.url in caught.value.message
