"""A small HTTP/1.1 client for one server: POST a JSON body, read the response as lines.

Why not httpx: at 64 conversations, httpx's layers (the connection pool's bookkeeping,
anyio streams, h11 events, per-request models) cost about as much CPU as the rest of the
model call. This speaks exactly what Ollama's /api/chat needs over asyncio streams, with
httptools (uvicorn's C parser, already a dependency) for the response, and keeps idle
connections for the next calls. No proxies: Ollama is reached directly."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httptools


class Unreachable(Exception):
    """Raised when the server cannot be connected to, or drops the connection mid-answer."""


class TimedOut(Exception):
    """Raised when the server sends nothing for `timeout` seconds."""


class HttpStatus(Exception):
    """Raised for a 4xx or 5xx answer, with its body."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body


Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class _Answer:
    """httptools callbacks: the status, the body split into lines, the end of the message."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.partial = b""
        self.done = False
        self.body = b""  # an error answer's body, kept whole
        self.keep_alive = False
        self.parser: httptools.HttpResponseParser | None = None

    def on_headers_complete(self) -> None:
        # asked here: once the message is complete the parser has reset and says False
        self.keep_alive = self.parser is not None and self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        data = self.partial + body
        *complete, self.partial = data.split(b"\n")
        self.lines += complete
        self.body += body if len(self.body) < 65536 else b""

    def on_message_complete(self) -> None:
        if self.partial:
            self.lines.append(self.partial)
            self.partial = b""
        self.done = True


class LineClient:
    def __init__(self, base_url: str, timeout: float, keep: int = 128) -> None:
        url = urlsplit(base_url)
        self.tls = url.scheme == "https"
        self.host = url.hostname or "127.0.0.1"
        self.port = url.port or (443 if self.tls else 80)
        self.prefix = url.path.rstrip("/")
        self.authority = url.netloc.rsplit("@", 1)[-1]
        self.timeout = timeout
        self.keep = keep
        self._idle: list[Connection] = []

    async def _connect(self) -> Connection:
        try:
            async with asyncio.timeout(self.timeout):
                reader, writer = await asyncio.open_connection(
                    self.host, self.port, ssl=ssl.create_default_context() if self.tls else None, limit=1 << 20
                )
        except TimeoutError as e:
            raise TimedOut(f"no connection within {self.timeout:g} s") from e
        except OSError as e:
            raise Unreachable(str(e)) from e
        sock = writer.get_extra_info("socket")
        if sock is not None:  # a request is one write; the answer's lines must not wait for ACKs
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return reader, writer

    def _request(self, path: str, body: bytes) -> bytes:
        head = (
            f"POST {self.prefix}{path} HTTP/1.1\r\nHost: {self.authority}\r\nContent-Type: application/json\r\n"
            f"Accept: application/x-ndjson\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        return head.encode("latin-1") + body

    async def post_lines(self, path: str, body: bytes) -> AsyncIterator[bytes]:
        """The answer's lines as they arrive. A kept connection the server has closed
        meanwhile is replaced once, before any byte of the answer was read."""
        request = self._request(path, body)
        while self._idle:
            conn = self._idle.pop()
            if conn[0].at_eof() or conn[1].is_closing():
                conn[1].close()
                continue
            try:
                async for line in self._exchange(conn, request, reused=True):
                    yield line
                return
            except _Stale:
                continue
        async for line in self._exchange(await self._connect(), request, reused=False):
            yield line

    async def _exchange(self, conn: Connection, request: bytes, reused: bool) -> AsyncIterator[bytes]:
        reader, writer = conn
        answer = _Answer()
        parser = answer.parser = httptools.HttpResponseParser(answer)
        finished = False
        try:
            writer.write(request)
            first = True
            while not answer.done:
                data = await self._read(reader, stale_is_possible=reused and first)
                first = False
                try:
                    parser.feed_data(data)
                except httptools.HttpParserError as e:
                    raise Unreachable(f"not an HTTP answer: {e}") from e
                if parser.get_status_code() >= 400:
                    continue  # the whole error body first
                lines, answer.lines = answer.lines, []
                for line in lines:  # never yielded under a timeout: it would cancel the caller
                    yield line
            finished = True
        finally:
            if finished and answer.keep_alive and len(self._idle) < self.keep:
                self._idle.append(conn)
            else:
                writer.close()
        if parser.get_status_code() >= 400:
            raise HttpStatus(parser.get_status_code(), answer.body)

    async def _read(self, reader: asyncio.StreamReader, stale_is_possible: bool) -> bytes:
        try:
            async with asyncio.timeout(self.timeout):
                data = await reader.read(65536)
        except TimeoutError as e:
            raise TimedOut(f"nothing within {self.timeout:g} s") from e
        except OSError as e:
            if stale_is_possible:
                raise _Stale() from e
            raise Unreachable(str(e)) from e
        if not data:
            if stale_is_possible:
                raise _Stale()
            raise Unreachable("the server closed the connection mid-answer")
        return data

    def close(self) -> None:
        for _, writer in self._idle:
            writer.close()
        self._idle.clear()


class _Stale(Exception):
    """A kept connection the server had closed: try another one."""
