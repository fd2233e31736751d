"""The HTTP transport under the model clients: httpx's transport interface on httptools.

ChatOllama (through the ollama client) and ChatOpenAI (through the openai client) speak httpx,
and keep doing so: requests, status errors, response objects, content decoding and timeouts
are httpx's. Only the bytes on the wire go through this transport instead of httpx's own
(httpcore and h11), which parses every streamed line in pure Python and walked its whole
connection pool on each request and each response it closed. Here each response is parsed
by httptools (llhttp, in C: the parser uvicorn already serves Sophos with) as it arrives, on
an asyncio protocol, and an idle connection is taken from the pool in constant time.
`python -m bench.model_transport` measures a streamed call's client CPU both ways.

Why not aiohttp under httpx (httpx-aiohttp): it cost as little CPU, but importing it took
~9 MB of RSS (aiohttp, yarl, multidict, two TLS contexts made at import), most of the
memory target's room; httptools is loaded already.

What it does: HTTP/1.1 to http and https origins, keep-alive (idle connections per origin,
most recent first), bodies of a known length, chunked or closed by the server, httpx's
connect and read timeouts. A reused connection the server closed while it was idle is
retried once on a new one (nothing of the response came back, so nothing was answered).
Closing a response before its end closes its connection: the server sees it and stops
generating. A response ends where its framing says: bytes after it are never part of it, and
a connection that had any (or received bytes while idle) is closed, never reused. Bounds on
what a server sends (head size and deadline, inflated size, line length) are in
adapters.langchain.bounds; proxies and the choice of transport in adapters.langchain.client.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import AsyncIterator
from typing import cast

import httptools
import httpx

from adapters.langchain.bounds import HEAD_MAX, ResponseRefused

KEEP_IDLE = 128  # idle connections kept per origin: as many as runs may call the model at once
PAUSE_AT = 1 << 20  # bytes received and not yet read by the client: stop reading the socket


class Stale(Exception):
    """A reused connection the server closed before answering."""


class Extra(Exception):
    """Bytes after the end of the response: raised in httptools' callback to stop it there."""


class Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: httptools' callbacks fill in the response being read."""

    def __init__(self, origin: tuple[bytes, str, int]) -> None:
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.uses = 0
        self.expecting = False  # a request was sent and its response is not whole yet
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.head = False  # the status line and headers are in
        self.complete = False  # the whole body is in
        self.keep_alive = False
        self.received = False  # any byte of this response
        self.head_size = 0  # bytes received before the head was whole
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.paused = False
        self.error: Exception | None = None
        self.waiter: asyncio.Future[None] | None = None

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is one without subclassing it

    def data_received(self, data: bytes) -> None:
        if not self.expecting:  # while idle, or after the response's end: never to be reused
            self.close()
            return
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as e:
            if not self.complete:
                refused = e.__context__ if isinstance(e.__context__, ResponseRefused) else None
                self._fail(refused or httpx.RemoteProtocolError(f"malformed response from the model server: {e}"))
            self.close()  # complete: the response is whole, what followed it is dropped with the connection
            self._wake()
            return
        if not self.head:
            self.head_size += len(data)
            if self.head_size > HEAD_MAX:
                self._fail(ResponseRefused(f"a response head over {HEAD_MAX >> 10} KiB"))
                self.close()
                self._wake()
                return
        if self.buffered >= PAUSE_AT and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.complete:
            return
        if self.head and not self._framed():
            self.complete = True  # a body that ends where the connection does
        elif not self.received:
            self._fail(Stale())
        else:
            self._fail(httpx.RemoteProtocolError("the model server closed the connection mid-response"))
        self._wake()

    # httptools callbacks (an exception raised in one stops the parser: HttpParserError)

    def on_message_begin(self) -> None:
        if self.complete:
            raise Extra

    def on_status(self, reason: bytes) -> None:
        self.reason = reason
        self._count(len(reason))

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))
        self._count(len(name) + len(value) + 4)

    def _count(self, size: int) -> None:
        # a head arriving in one read with its body is counted here: data_received sees it whole
        self.head_size += size
        if self.head_size > HEAD_MAX:
            raise ResponseRefused(f"a response head over {HEAD_MAX >> 10} KiB")

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.head = True

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self.buffered += len(body)

    def on_message_complete(self) -> None:
        self.keep_alive = self.parser.should_keep_alive()
        self.complete = True
        self.expecting = False

    # the transport's side

    def _framed(self) -> bool:
        """Whether the response says where its body ends (a length or chunks)."""
        names = {n.lower() for n, _ in self.headers}
        return b"content-length" in names or b"transfer-encoding" in names

    def _fail(self, error: Exception) -> None:
        if self.error is None:
            self.error = error

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def send(self, data: bytes) -> None:
        self.uses += 1
        self._reset()
        self.expecting = True
        assert self.transport is not None
        self.transport.write(data)

    async def wait(self, timeout: float | None) -> None:
        """Until more of the response is in (or the connection failed): httpx.ReadTimeout after `timeout`."""
        if self.error is not None:
            raise self.error
        self.waiter = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout):
                await self.waiter
        except TimeoutError:
            raise httpx.ReadTimeout(f"the model server sent nothing for {timeout:g} s") from None
        finally:
            self.waiter = None
        if self.error is not None and not self.chunks:
            raise self.error

    def take(self) -> bytes:
        data = b"".join(self.chunks)
        self.chunks.clear()
        self.buffered = 0
        if self.paused and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        return data

    @property
    def reusable(self) -> bool:
        return self.complete and self.keep_alive and not self.closed and not self.chunks

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class Body(httpx.AsyncByteStream):
    def __init__(self, pool: ModelTransport, conn: Connection, timeout: float | None) -> None:
        self.pool = pool
        self.conn = conn
        self.timeout = timeout
        self.done = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self.conn
        while True:
            if conn.chunks:
                yield conn.take()
            elif conn.complete:
                return
            else:
                await conn.wait(self.timeout)

    async def aclose(self) -> None:
        if self.done:
            return
        self.done = True
        if self.conn.reusable:
            self.pool.release(self.conn)
        else:  # read only in part: closing is how the server learns to stop
            self.conn.close()


class ModelTransport(httpx.AsyncBaseTransport):
    """Keep-alive HTTP/1.1 on httptools for one model's clients (module docstring)."""

    def __init__(self, tls: ssl.SSLContext | None = None, keep: int = KEEP_IDLE) -> None:
        self.tls = tls
        self.keep = keep
        self.idle: dict[tuple[bytes, str, int], list[Connection]] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.closed:
            raise httpx.ConnectError("the model client is closed")
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        url = request.url
        scheme = url.raw_scheme
        if scheme not in (b"http", b"https"):
            raise httpx.UnsupportedProtocol(f"the model server's URL must be http or https, not {url.scheme!r}")
        port = url.port or (443 if scheme == b"https" else 80)
        origin = (scheme, url.host, port)
        message = self._message(request, await request.aread())
        for attempt in (1, 2):
            conn = await self._connection(origin, timeouts.get("connect"))
            reused = conn.uses > 0
            conn.send(message)
            try:
                while not conn.head:
                    await conn.wait(timeouts.get("read"))
            except Stale:
                if reused and attempt == 1:
                    continue  # closed by the server while idle: nothing was answered
                raise httpx.RemoteProtocolError("the model server closed the connection without answering") from None
            except BaseException:
                conn.close()  # cancelled or timed out mid-response: never reused
                raise
            if request.method == "HEAD":
                conn.complete, conn.keep_alive = True, False
            extensions = {"http_version": b"HTTP/1.1", "reason_phrase": conn.reason}
            stream = Body(self, conn, timeouts.get("read"))
            return httpx.Response(conn.status, headers=conn.headers, stream=stream, extensions=extensions)
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _message(request: httpx.Request, body: bytes) -> bytes:
        headers = request.headers.raw
        if any(n.lower() == b"transfer-encoding" for n, _ in headers):  # a stream of unknown length, read whole
            headers = [(n, v) for n, v in headers if n.lower() != b"transfer-encoding"]
            headers.append((b"Content-Length", str(len(body)).encode()))
        lines = [request.method.encode(), b" ", request.url.raw_path, b" HTTP/1.1\r\n"]
        for name, value in headers:
            lines += [name, b": ", value, b"\r\n"]
        lines += [b"\r\n", body]
        return b"".join(lines)

    async def _connection(self, origin: tuple[bytes, str, int], timeout: float | None) -> Connection:
        loop = asyncio.get_running_loop()
        if loop is not self.loop:  # connections belong to the loop that opened them
            self._drop_idle()
            self.loop = loop
        idle = self.idle.get(origin)
        while idle:
            conn = idle.pop()
            if not conn.closed and conn.transport is not None and not conn.transport.is_closing():
                return conn
        scheme, host, port = origin
        tls = None
        if scheme == b"https":
            tls = self.tls if self.tls is not None else httpx.create_ssl_context()
        try:
            async with asyncio.timeout(timeout):
                _, conn = await loop.create_connection(
                    lambda: Connection(origin), host, port, ssl=tls, server_hostname=host if tls else None
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(f"no connection to {host}:{port} within {timeout:g} s") from None
        except OSError as e:  # refused, unreachable, name not found, TLS failures (ssl.SSLError)
            raise httpx.ConnectError(f"cannot connect to {host}:{port}: {e}") from e
        return conn

    def release(self, conn: Connection) -> None:
        idle = self.idle.setdefault(conn.origin, [])
        if self.closed or len(idle) >= self.keep or asyncio.get_running_loop() is not self.loop:
            conn.close()
        else:
            idle.append(conn)

    def _drop_idle(self) -> None:
        for conns in self.idle.values():
            for conn in conns:
                try:
                    conn.close()
                except RuntimeError:  # its loop is closed: so is the socket's use
                    pass
        self.idle.clear()

    async def aclose(self) -> None:
        self.closed = True
        self._drop_idle()
