"""A small forward HTTP proxy on 127.0.0.1 that records what it is asked and forwards it:
plain http in absolute form (`GET http://host:port/path HTTP/1.1`, sent on upstream in origin
form with `Connection: close`, the answer relayed with `Connection: close` until the upstream closes) and CONNECT
tunnels (for https, relayed byte for byte both ways). Runs on the test's event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

HOP_BY_HOP = {b"connection", b"proxy-connection", b"keep-alive", b"proxy-authorization"}


class ForwardProxy:
    def __init__(self) -> None:
        self.requests: list[str] = []  # each request line as received
        self.url = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            line, *fields = head[:-4].split(b"\r\n")
            method, target, _ = line.split(b" ", 2)
            self.requests.append(line.decode("latin-1"))
            if method == b"CONNECT":
                await self._tunnel(target.decode(), reader, writer)
            else:
                await self._forward(method, target.decode(), fields, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()

    async def _tunnel(self, target: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, _, port = target.rpartition(":")
        up_reader, up_writer = await asyncio.open_connection(host.strip("[]"), int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            up_writer.close()

    async def _forward(
        self, method: bytes, target: str, fields: list[bytes], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        url = urlsplit(target)
        if url.scheme != "http" or url.hostname is None:
            writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        kept = [f for f in fields if f.split(b":", 1)[0].strip().lower() not in HOP_BY_HOP]
        length = next((int(f.split(b":", 1)[1]) for f in kept if f.lower().startswith(b"content-length:")), 0)
        body = await reader.readexactly(length)
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        up_reader, up_writer = await asyncio.open_connection(url.hostname, url.port or 80)
        try:
            up_writer.write(b"\r\n".join([b"%s %s HTTP/1.1" % (method, path.encode()), *kept, b"Connection: close", b"", body]))
            await up_writer.drain()
            # answered once: the client's connection closes with it, as the answer's head says
            # (else a client may send its next request on it before it sees the close)
            status, *answer = (await up_reader.readuntil(b"\r\n\r\n"))[:-4].split(b"\r\n")
            kept = [f for f in answer if f.split(b":", 1)[0].strip().lower() not in HOP_BY_HOP]
            writer.write(b"\r\n".join([status, *kept, b"Connection: close", b"", b""]))
            await pipe(up_reader, writer)
        finally:
            up_writer.close()


async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    with contextlib.suppress(ConnectionError, OSError, RuntimeError):
        if sink.can_write_eof():
            sink.write_eof()


@contextlib.asynccontextmanager
async def forward_proxy() -> AsyncIterator[ForwardProxy]:
    proxy = ForwardProxy()
    srv = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    proxy.url = f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}"
    async with srv:
        yield proxy
