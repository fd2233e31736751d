"""The Ollama adapter's own HTTP client against a real socket server that misbehaves the ways
servers and proxies do: closing a kept connection, answering in odd pieces, stopping halfway."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from adapters.ollama.http import HttpStatus, LineClient, TimedOut, Unreachable

BODY = b'{"a": 1}\n{"b": 2}\n{"done": true}'  # the last line without its newline


class Server:
    """Answers each request with BODY, chunked, in pieces; then keeps the connection or not."""

    def __init__(self, close_after: bool, stall_after_first: bool = False, status: int = 200) -> None:
        self.close_after = close_after
        self.stall_after_first = stall_after_first
        self.status = status
        self.requests: list[bytes] = []
        self.connections = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
                self.requests.append(head + await reader.readexactly(length))
                writer.write(f"HTTP/1.1 {self.status} X\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
                for i, piece in enumerate((BODY[:5], BODY[5:13], BODY[13:])):
                    writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    await writer.drain()
                    if self.stall_after_first and i == 0:
                        await asyncio.sleep(5)
                writer.write(b"0\r\n\r\n")
                await writer.drain()
                if self.close_after:
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


@asynccontextmanager
async def serving(server: Server) -> AsyncIterator[str]:
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/prefix"
    finally:
        listener.close()


async def lines(client: LineClient) -> list[bytes]:
    return [line async for line in client.post_lines("/api/chat", b"{}")]


async def test_lines_arrive_whole_whatever_the_pieces_and_connections_are_kept() -> None:
    server = Server(close_after=False)
    async with serving(server) as url:
        client = LineClient(url, timeout=5)
        for _ in range(3):
            assert await lines(client) == [b'{"a": 1}', b'{"b": 2}', b'{"done": true}']
        client.close()
    assert server.connections == 1
    assert server.requests[0].startswith(b"POST /prefix/api/chat HTTP/1.1\r\n")


async def test_a_kept_connection_the_server_closed_is_replaced_without_an_error() -> None:
    server = Server(close_after=True)
    async with serving(server) as url:
        client = LineClient(url, timeout=5)
        for _ in range(3):
            assert len(await lines(client)) == 3
            await asyncio.sleep(0.05)  # the server's close has arrived
        client.close()
    assert server.connections == 3 and len(server.requests) == 3


async def test_a_caller_that_stops_reading_closes_the_connection_instead_of_keeping_it() -> None:
    server = Server(close_after=False, stall_after_first=True)
    async with serving(server) as url:
        client = LineClient(url, timeout=5)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.3):
                await lines(client)
        assert client._idle == []


async def test_silence_past_the_timeout_is_timed_out_and_a_closed_port_unreachable() -> None:
    server = Server(close_after=False, stall_after_first=True)
    async with serving(server) as url:
        with pytest.raises(TimedOut):
            await lines(LineClient(url, timeout=0.3))
    with pytest.raises(Unreachable):
        await lines(LineClient(url, timeout=1))


async def test_an_error_status_comes_with_its_whole_body() -> None:
    async with serving(Server(close_after=False, status=500)) as url:
        with pytest.raises(HttpStatus) as error:
            await lines(LineClient(url, timeout=5))
    assert error.value.status == 500 and error.value.body == BODY
