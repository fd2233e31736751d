"""What a model server may send, bounded, whichever transport carries the bytes.

A model server is a peer, not a part of Sophos: a broken or hostile one must cost a run a
clear error, not the process's memory or a run that never ends (issue 34 item 4). Measured
before these bounds (bench/model_hostile.py): 3 GiB of headers took +3.5 GiB of RSS, a
0.5 MiB gzip bomb +786 MiB, a 256 MiB NDJSON line +259 MiB, and a server sending one header
byte every 2 s kept a run `running` for good. So, for every response:
- its head (status line and headers) is at most HEAD_MAX bytes (the httptools transport
  counts them; httpx's own h11 stops at 16 KiB) and must be whole within the read timeout
  (MODEL_TIMEOUT), however slowly it trickles in;
- a gzip or deflate body is inflated here, at most STEP bytes at a time and INFLATED_MAX in
  all, so httpx never sees an encoded body (and never inflates one whole); other encodings
  are refused (we only ask for these two);
- a line (what the NDJSON and SSE parsers above buffer whole) is at most LINE_MAX bytes.
Each breach raises ResponseRefused, which the model adapters report as MODEL_BAD_RESPONSE.

LINE_MAX: the longest legitimate line is one non-streamed answer or one streamed chunk with
the whole tool calls, bounded by the model's window: 128k tokens of ~4 bytes, JSON-escaped,
is ~1 MiB; 8 MiB leaves room for wider windows and costs at most that per response held.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

HEAD_MAX = 64 * 1024
LINE_MAX = 8 * 1024 * 1024
INFLATED_MAX = 64 * 1024 * 1024
STEP = 64 * 1024  # inflated bytes per step: what one compressed chunk may turn into at once
ACCEPTED = "gzip, deflate"


class ResponseRefused(httpx.RemoteProtocolError):
    """Raised when a model server's response breaks a bound: `reason` says which, for people."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the model server sent {reason}")
        self.reason = reason


def refusal(exc: BaseException) -> ResponseRefused | None:
    """The ResponseRefused behind an exception, if any: the clients above wrap transport errors
    (openai's APIConnectionError) or raise them as they are (ollama)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ResponseRefused):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


class Inflater:
    """gzip or deflate, inflated STEP bytes at a time, INFLATED_MAX in all."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        # deflate is zlib-wrapped by the RFC, raw by some servers: the first bytes tell (as httpx does)
        self.z = zlib.decompressobj(zlib.MAX_WBITS | 16 if encoding == "gzip" else zlib.MAX_WBITS)
        self.started = False
        self.total = 0

    def feed(self, data: bytes) -> Iterator[bytes]:
        while not self.z.eof:
            try:
                out = self.z.decompress(data, STEP)
            except zlib.error:
                if self.encoding == "deflate" and not self.started:
                    self.z, self.started = zlib.decompressobj(-zlib.MAX_WBITS), True
                    continue
                raise ResponseRefused(f"a {self.encoding} body that does not inflate") from None
            self.started = True
            self.total += len(out)
            if self.total > INFLATED_MAX:
                raise ResponseRefused(f"a {self.encoding} body inflating past {INFLATED_MAX >> 20} MiB")
            if out:
                yield out
            data = self.z.unconsumed_tail
            if not data and len(out) < STEP:  # a full step may have held output back: ask again
                return


class Lines:
    """Counts the bytes since the last newline; a line past LINE_MAX is refused."""

    def __init__(self) -> None:
        self.run = 0

    def check(self, piece: bytes) -> None:
        last = piece.rfind(b"\n")
        if last < 0:
            self.run += len(piece)
        else:
            first = piece.find(b"\n")
            if self.run + first > LINE_MAX or (len(piece) > LINE_MAX and _longest(piece) > LINE_MAX):
                self._refuse()
            self.run = len(piece) - last - 1
        if self.run > LINE_MAX:
            self._refuse()

    @staticmethod
    def _refuse() -> None:
        raise ResponseRefused(f"a line longer than {LINE_MAX >> 20} MiB")


def _longest(piece: bytes) -> int:
    return max(len(line) for line in piece.split(b"\n"))


class BoundedBody(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, inflater: Inflater | None) -> None:
        self.inner = inner
        self.inflater = inflater
        self.lines = Lines()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            pieces = self.inflater.feed(chunk) if self.inflater is not None else (chunk,)
            for piece in pieces:
                self.lines.check(piece)
                yield piece

    async def aclose(self) -> None:
        await self.inner.aclose()


class BoundedTransport(httpx.AsyncBaseTransport):
    """Any httpx transport, with the bounds of the module docstring on what comes back."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.headers["Accept-Encoding"] = ACCEPTED
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        read = timeouts.get("read")
        # a per-read timeout restarts with each byte: a head sent a byte at a time needs a deadline of its own
        try:
            async with asyncio.timeout(read):
                response = await self.inner.handle_async_request(request)
        except TimeoutError:
            raise httpx.ReadTimeout(f"the model server did not send a whole response head within {read:g} s") from None
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        inflater = None
        headers: Any = response.headers
        if encoding not in ("", "identity"):
            if encoding not in ("gzip", "deflate"):
                await response.aclose()
                raise ResponseRefused(f"a body encoded as {encoding[:40]!r} (only {ACCEPTED} are accepted)")
            inflater = Inflater(encoding)
            # the body handed up is the inflated one: nothing above must decode or count it again
            headers = [(k, v) for k, v in response.headers.raw if k.lower() not in (b"content-encoding", b"content-length")]
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=headers,
            stream=BoundedBody(response.stream, inflater),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


async def read_capped(response: httpx.Response, limit: int = LINE_MAX) -> bytes:
    """A response's whole body, refused past `limit` bytes (for a body read whole, such as the
    readiness probe's list of models: lines alone do not bound it)."""
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise ResponseRefused(f"a body over {limit >> 20} MiB where a short list was expected")
        parts.append(chunk)
    return b"".join(parts)
