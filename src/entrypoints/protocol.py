"""uvicorn's HTTP protocols with a deadline for each request head (slowloris).

uvicorn closes a connection that stays idle after a response (`timeout_keep_alive`), but
any byte re-arms nothing and cancels that timer, and nothing bounds a connection that
has not finished sending its request line and headers: a client trickling one byte at a
time holds a connection (and a slot of `limit_concurrency`) forever. Here a connection
must complete each request head within `timeout` seconds of connecting or of the end of
its previous response; otherwise it is closed. The body has its own deadline, in the
routes that read one (408).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)


def head_deadline_protocol(timeout: float) -> type[Any]:
    """The protocol class for uvicorn's `http=` option: on httptools' fast parser when it is
    installed (a product dependency), else on h11."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return _h11_deadline(timeout)

    class HttpToolsHeadDeadline(HttpToolsProtocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def _arm(self) -> None:
            self._disarm()
            self._head_timer = self.loop.call_later(timeout, self._expired)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _expired(self) -> None:  # armed only while no complete request head has come in
            self._head_timer = None
            if not self.transport.is_closing():
                log.info("closing a connection that sent no complete request within %g s", timeout)
                self.transport.close()

        def on_headers_complete(self) -> None:
            self._disarm()  # the head is in: the request runs
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HttpToolsHeadDeadline


def _h11_deadline(timeout: float) -> type[H11Protocol]:

    class HeadDeadlineProtocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
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
