"""uvicorn's HTTP protocols with a deadline for each request head (slowloris).

uvicorn closes a connection that stays idle after a response (`timeout_keep_alive`), but
any byte re-arms nothing and cancels that timer, and nothing bounds a connection that
has not finished sending its request line and headers: a client trickling one byte at a
time holds a connection (and a slot of `limit_concurrency`) forever. Here a connection
must complete each request head within `timeout` seconds of connecting or of the end of
its previous response; otherwise it is closed. The body has its own deadline, in the
routes that read one (408). A head is at most MAX_HEAD bytes (431): httptools would gather
any length. Connections still sending a head hold no slot of MAX_CONNECTIONS (requests in
progress), so idle sockets cannot refuse the requests being served; they are bounded per
client address instead.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)


MAX_HEAD = 32 * 1024  # bytes of a request line and headers; more is 431
PENDING_PER_CLIENT = 64  # connections of one client address still sending a request head


@dataclass
class _Shared:
    """What the connections of one server count together."""

    busy: set[Any] = field(default_factory=set)  # connections with a request in progress
    # client address -> its connections waiting for a request head, oldest first
    pending: dict[str, dict[_HeadWait, None]] = field(default_factory=lambda: defaultdict(dict))


def _reply_and_close(transport: Any, status: bytes, code: str, message: str) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    transport.write(
        b"HTTP/1.1 "
        + status
        + b"\r\ncontent-type: application/json\r\ncontent-length: "
        + str(len(body)).encode()
        + b"\r\nconnection: close\r\n\r\n"
        + body
    )
    transport.close()


class _HeadWait:
    """One connection's wait for a request head: its deadline, the bytes of the head so far,
    and its place among its client address's connections waiting for one."""

    def __init__(
        self, shared: _Shared, timeout: float, loop: asyncio.AbstractEventLoop, transport: asyncio.Transport, address: str
    ) -> None:
        self.shared, self.timeout, self.loop, self.transport, self.address = shared, timeout, loop, transport, address
        self.timer: asyncio.TimerHandle | None = None
        self.head_bytes = 0

    def arm(self) -> None:
        self.disarm()
        self.head_bytes = 0
        self.timer = self.loop.call_later(self.timeout, self.expired)
        waiting = self.shared.pending[self.address]
        waiting[self] = None
        if len(waiting) > PENDING_PER_CLIENT:  # the client's oldest idle connection makes room
            oldest = next(iter(waiting))
            log.info("closing the oldest of %d connections from %s that sent no request", len(waiting), self.address)
            oldest.disarm()
            oldest.transport.close()

    def disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        waiting = self.shared.pending.get(self.address)
        if waiting is not None:
            waiting.pop(self, None)
            if not waiting:
                del self.shared.pending[self.address]

    def expired(self) -> None:  # armed only while no complete request head has come in
        self.timer = None
        self.disarm()
        if not self.transport.is_closing():
            log.info("closing a connection that sent no complete request within %g s", self.timeout)
            self.transport.close()

    def too_large(self) -> None:
        self.disarm()
        log.info("closing a connection whose request head is over %d bytes", MAX_HEAD)
        _reply_and_close(
            self.transport,
            b"431 Request Header Fields Too Large",
            "HEADERS_TOO_LARGE",
            f"The request line and headers are over {MAX_HEAD} bytes",
        )


def head_deadline_protocol(timeout: float, limit: int | None = None) -> type[Any]:
    """The protocol class for uvicorn's `http=` option: on httptools' fast parser when it is
    installed (a product dependency), else on h11 (with uvicorn's own head limit and its
    connection count). `limit`: requests in progress at once (MAX_CONNECTIONS); beyond it,
    503. Connections still sending a head do not count: a hundred idle sockets must not
    refuse the requests being served; they are bounded apart, per client address, the
    oldest closed first, and each by the head deadline (_HeadWait)."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return _h11_deadline(timeout, limit)

    shared = _Shared()

    class HttpToolsHeadDeadline(HttpToolsProtocol):
        _wait: _HeadWait

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._wait = _HeadWait(shared, timeout, self.loop, transport, str(self.client[0]) if self.client else "")
            self._wait.arm()

        def data_received(self, data: bytes) -> None:
            wait = self._wait
            if wait.timer is None:
                super().data_received(data)
                return
            wait.head_bytes += len(data)
            super().data_received(data)  # the head may end within this chunk (then the timer is off)
            if wait.timer is not None and wait.head_bytes > MAX_HEAD and not self.transport.is_closing():
                wait.too_large()

        def on_headers_complete(self) -> None:
            self._wait.disarm()  # the head is in
            if len(self.url) + sum(len(k) + len(v) + 4 for k, v in self.headers) > MAX_HEAD:
                self._wait.too_large()
                return
            shared.busy.add(self)
            overloaded = limit is not None and (len(shared.busy) >= limit or len(self.tasks) >= limit)
            self.limit_concurrency = 0 if overloaded else None  # uvicorn's own 503 when 0
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            shared.busy.discard(self)
            super().on_response_complete()
            if not self.transport.is_closing():
                self._wait.arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._wait.disarm()
            shared.busy.discard(self)
            super().connection_lost(exc)

    return HttpToolsHeadDeadline


def _h11_deadline(timeout: float, limit: int | None) -> type[H11Protocol]:

    class HeadDeadlineProtocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self.limit_concurrency = limit  # uvicorn's own count, idle connections included
            self._arm()

        def _arm(self) -> None:
            self._disarm()
            self._head_timer = self.loop.call_later(timeout, self._expired)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _expired(self) -> None:
            self._head_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                log.info("closing a connection that sent no complete request within %g s", timeout)
                self.transport.close()

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state is not h11.IDLE:  # the head is in: the request runs
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeadDeadlineProtocol
