"""Model calls honour the proxy variables (adapters.langchain.client): through a real local
forward proxy, in absolute form for http and by CONNECT for https, the readiness probe
included; NO_PROXY and MODEL_TRANSPORT=fast go straight to the server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.langchain.client import exempt, proxy_for
from adapters.langchain.transport import ModelTransport
from adapters.ollama.model import OllamaModel
from domain.errors import ModelUnreachable
from domain.model import UserMessage
from ports.model import TextChunk
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.forward_proxy import forward_proxy
from tests.support.raw_server import request_head, self_signed, server

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with fake_ollama() as fake:
        yield fake


async def answer_of(model: OllamaModel) -> str:
    return "".join([o.text async for o in model.stream("sys", [UserMessage("hi")], []) if isinstance(o, TextChunk)])


async def test_an_ollama_call_and_its_readiness_probe_go_through_http_proxy(
    monkeypatch: pytest.MonkeyPatch, ollama: FakeOllama
) -> None:
    ollama.add({"text": "through the proxy"})
    async with forward_proxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        model = OllamaModel(ollama.url, "qwen3")
        try:
            assert "through the proxy" in await answer_of(model)
            assert (await model.check()).ok
        finally:
            await model.aclose()
    assert f"POST {ollama.url}/api/chat HTTP/1.1" in proxy.requests
    assert f"GET {ollama.url}/api/tags HTTP/1.1" in proxy.requests


async def test_an_https_model_server_is_reached_by_connect_through_https_proxy_and_verified(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server_side, _ = self_signed(tmp_path)
    chat = b'{"model":"qwen3","message":{"role":"assistant","content":"secure"},"done":true}\n'
    tags = json.dumps({"models": [{"name": "qwen3:latest"}]}).encode()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        while True:
            head = await request_head(reader)
            body = tags if head.startswith(b"GET /api/tags") else chat
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()

    # the trust both the calls and the probe use: httpx's, which reads SSL_CERT_FILE
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "cert.pem"))
    async with server(handler, tls=server_side) as s, forward_proxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        model = OllamaModel(s.url, "qwen3")
        try:
            assert await answer_of(model) == "secure"
            assert (await model.check()).ok
        finally:
            await model.aclose()
    port = s.url.rsplit(":", 1)[1]
    assert proxy.requests and all(r == f"CONNECT localhost:{port} HTTP/1.1" for r in proxy.requests)


async def test_an_untrusted_certificate_fails_the_call_and_the_probe_alike(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server_side, _ = self_signed(tmp_path)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await request_head(reader)

    async with server(handler, tls=server_side) as s:
        model = OllamaModel(s.url, "qwen3", timeout=5)
        try:
            with pytest.raises(ModelUnreachable):
                await answer_of(model)
            assert not (await model.check()).ok
        finally:
            await model.aclose()


async def test_no_proxy_and_the_fast_setting_go_straight_to_the_model_server(
    monkeypatch: pytest.MonkeyPatch, ollama: FakeOllama
) -> None:
    async with forward_proxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.0/8")
        exempted = OllamaModel(ollama.url, "qwen3")
        monkeypatch.delenv("NO_PROXY")
        fast = OllamaModel(ollama.url, "qwen3", transport="fast")
        try:
            for model in (exempted, fast):
                assert isinstance(model._transport.inner, ModelTransport)
                assert await answer_of(model)
        finally:
            await exempted.aclose()
            await fast.aclose()
    assert proxy.requests == []


def test_proxy_for_reads_the_variables_as_curl_and_httpx_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "proxy.example:3128")
    assert proxy_for("http://ollama:11434") is None
    assert proxy_for("https://models.example/v1") == "http://proxy.example:3128"
    monkeypatch.setenv("ALL_PROXY", "socks5://proxy.example:1080")
    assert proxy_for("http://ollama:11434") == "socks5://proxy.example:1080"
    monkeypatch.setenv("no_proxy", "ollama")
    assert proxy_for("http://ollama:11434") is None
    assert exempt("a.internal.example", 443, ".internal.example") and not exempt("notinternal.example", 443, "internal.example")
    assert exempt("10.1.2.3", 80, "10.0.0.0/8") and not exempt("10.1.2.3", 80, "10.1.2.3:8080")
