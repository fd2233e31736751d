"""The model clients' HTTP transport (adapters.langchain.transport) through httpx, against raw
servers on real sockets that answer the way model servers and the network do: keep-alive,
chunks split anywhere, bodies ended by closing, stalls, connections cut or closed while idle, TLS."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from adapters.langchain.transport import ModelTransport
from tests.support.raw_server import answer, replying, request_head, self_signed, server


@pytest.fixture(params=["asyncio", "uvloop"])
def event_loop_policy(request: pytest.FixtureRequest) -> asyncio.AbstractEventLoopPolicy:
    """Every test on asyncio's loop and on uvloop's, which `sophos serve` runs on (its
    transports are not asyncio's classes)."""
    if request.param == "uvloop":
        import uvloop

        return uvloop.EventLoopPolicy()
    return asyncio.DefaultEventLoopPolicy()


async def test_sequential_calls_share_one_kept_alive_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        while True:
            head = await request_head(reader)
            writer.write(answer(head.split(b" ")[1]))

    async with server(handler) as s:
        transport = ModelTransport()
        async with httpx.AsyncClient(transport=transport, base_url=s.url) as client:
            texts = [(await client.post(f"/call/{i}", content=b"x" * i)).text for i in range(5)]
        assert texts == [f"/call/{i}" for i in range(5)]
        assert s.connections == 1


async def test_a_chunked_stream_split_anywhere_arrives_whole_and_in_order() -> None:
    lines = [b'{"n":%d}\n' % i for i in range(50)]
    wire = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n"
    wire += b"".join(b"%x\r\n%s\r\n" % (len(line), line) for line in lines) + b"0\r\n\r\n"

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await request_head(reader)
        for i in range(0, len(wire), 7):  # pieces that cut the status line, headers and chunk sizes
            writer.write(wire[i : i + 7])
            await writer.drain()
            await asyncio.sleep(0)
        await reader.read()  # keep the connection open

    async with server(handler) as s:
        async with httpx.AsyncClient(transport=ModelTransport(), base_url=s.url) as client:
            async with client.stream("POST", "/api/chat", content=b"{}") as r:
                got = [line async for line in r.aiter_lines()]
                assert r.headers["content-type"] == "application/x-ndjson"
        assert got == [line.decode().strip() for line in lines]


async def test_a_body_the_server_ends_by_closing_is_read_to_its_end() -> None:
    async with server(replying(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\ndata: one\n\ndata: two\n\n")) as s:
        transport = ModelTransport()
        async with httpx.AsyncClient(transport=transport, base_url=s.url) as client:
            assert (await client.get("/events")).text == "data: one\n\ndata: two\n\n"
            assert (await client.get("/events")).text.startswith("data: one")
        assert s.connections == 2  # not kept: the server said close


async def test_a_large_body_comes_through_intact() -> None:
    body = bytes(range(256)) * 20_000  # 5 MB: reading pauses and resumes
    async with server(replying(answer(body), hold=True)) as s:
        async with httpx.AsyncClient(transport=ModelTransport(), base_url=s.url) as client:
            async with client.stream("GET", "/big") as r:
                chunks = []
                async for chunk in r.aiter_raw():
                    chunks.append(chunk)
                    await asyncio.sleep(0.001)  # a slow reader
        assert b"".join(chunks) == body


async def test_a_kept_connection_the_server_closed_while_idle_is_replaced() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await request_head(reader)
        writer.write(answer(b"first" if n == 1 else b"again"))
        await writer.drain()
        if n == 1:
            await request_head(reader)  # the next request: closed without an answer, as an idle timeout does

    async with server(handler) as s:
        transport = ModelTransport()
        async with httpx.AsyncClient(transport=transport, base_url=s.url) as client:
            assert (await client.post("/a", content=b"1")).text == "first"
            assert (await client.post("/b", content=b"2")).text == "again"
        assert s.connections == 2


async def test_a_response_cut_short_is_an_error_not_a_short_body() -> None:
    async with server(replying(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this")) as s:
        async with httpx.AsyncClient(transport=ModelTransport(), base_url=s.url) as client:
            with pytest.raises(httpx.RemoteProtocolError, match="mid-response"):
                await client.get("/cut")


async def test_a_server_that_answers_nothing_is_a_protocol_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await request_head(reader)

    async with server(handler) as s:
        async with httpx.AsyncClient(transport=ModelTransport(), base_url=s.url) as client:
            with pytest.raises(httpx.RemoteProtocolError, match="without answering"):
                await client.get("/nothing")
        assert s.connections == 1  # a new connection is not retried: the server saw the request


async def test_a_stall_is_a_read_timeout_and_its_connection_is_not_reused() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await request_head(reader)
        if n == 1:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf")
            await writer.drain()
            await asyncio.sleep(5)
        writer.write(answer(b"fine"))
        await writer.drain()
        await reader.read()

    async with server(handler) as s:
        async with httpx.AsyncClient(transport=ModelTransport(), base_url=s.url, timeout=0.3) as client:
            with pytest.raises(httpx.ReadTimeout):
                await client.get("/slow")
            assert (await client.get("/next")).text == "fine"
        assert s.connections == 2


async def test_a_refused_connection_is_a_connect_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        pass

    async with server(handler) as s:
        url = s.url
    async with httpx.AsyncClient(transport=ModelTransport(), base_url=url) as client:
        with pytest.raises(httpx.ConnectError, match="cannot connect"):
            await client.get("/")


async def test_a_response_closed_early_closes_its_connection() -> None:
    closed = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await request_head(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            for _ in range(200):
                writer.write(b"6\r\ntoken \r\n")
                await writer.drain()
                await asyncio.sleep(0.01)
                if reader.at_eof():
                    break
        except ConnectionError:
            pass  # what a server sees when its client went away
        closed.set()

    async with server(handler) as s:
        transport = ModelTransport()
        async with httpx.AsyncClient(transport=transport, base_url=s.url) as client:
            async with client.stream("POST", "/api/chat", content=b"{}") as r:
                async for _ in r.aiter_raw():
                    break
            await asyncio.wait_for(closed.wait(), 1)  # the 200 tokens would take 2 s
        assert not transport.idle.get((b"http", "127.0.0.1", int(s.url.rsplit(":", 1)[1])))


async def test_https_is_verified_against_the_given_context(tmp_path: Path) -> None:
    server_side, trusting = self_signed(tmp_path)
    async with server(replying(answer(b"secure"), hold=True), tls=server_side) as s:
        async with httpx.AsyncClient(transport=ModelTransport(tls=trusting), base_url=s.url) as client:
            assert (await client.get("/")).text == "secure"
        # the system's CAs do not know this certificate: refused, never sent in the clear
        async with httpx.AsyncClient(transport=ModelTransport(), base_url=s.url) as client:
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await client.get("/")


async def test_bytes_after_a_response_are_not_its_body_and_its_connection_is_not_reused() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await request_head(reader)
        writer.write(answer(b"first answer") + b"SMUGGLED" if n == 1 else answer(b"second answer"))
        await writer.drain()
        if n == 1:  # a second request on this connection would read "SMUGGLED" as its answer
            await request_head(reader)
            writer.write(answer(b"desynchronised"))
            await writer.drain()
        await reader.read()

    async with server(handler) as s:
        async with httpx.AsyncClient(transport=ModelTransport(), base_url=s.url) as client:
            assert (await client.get("/a")).text == "first answer"
            assert (await client.get("/b")).text == "second answer"
        assert s.connections == 2


async def test_a_connection_that_received_bytes_while_idle_is_not_reused() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await request_head(reader)
        writer.write(answer(b"first answer" if n == 1 else b"second answer"))
        await writer.drain()
        if n == 1:
            await asyncio.sleep(0.05)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nSMUGGLED")  # an answer to no request
            await writer.drain()
        await reader.read()

    async with server(handler) as s:
        async with httpx.AsyncClient(transport=ModelTransport(), base_url=s.url) as client:
            assert (await client.get("/a")).text == "first answer"
            await asyncio.sleep(0.2)
            assert (await client.get("/b")).text == "second answer"
        assert s.connections == 2
