"""The outermost layer of the app: safe response headers, and the one place an unexpected
failure becomes a 500.

`X-Content-Type-Options: nosniff` on every response, so a browser never runs a JSON body
or an export as something else; `Cache-Control: no-store` on API responses that set no
policy of their own (conversations and exports must not linger in shared or disk caches;
the event stream keeps the contract's `no-cache, no-transform`).

Starlette's own handler for `Exception` logs nothing and re-raises, so the server logs the
traceback a second time; here each unexpected failure is logged once, with its traceback,
and answered with the error envelope.
"""

from __future__ import annotations

import logging

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from entrypoints.http.errors import error_response

log = logging.getLogger(__name__)


class HardeningMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        api = scope["path"].startswith("/api/")
        started = False

        async def send_hardened(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = MutableHeaders(scope=message)
                headers["X-Content-Type-Options"] = "nosniff"
                if api and "cache-control" not in headers:
                    headers["Cache-Control"] = "no-store"
            await send(message)

        try:
            await self.app(scope, receive, send_hardened)
        except Exception:
            log.exception("%s %s failed", scope.get("method"), scope["path"])
            if not started:  # otherwise the client sees the response cut short
                await error_response(500, "UNKNOWN_ERROR", "Internal error")(scope, receive, send_hardened)
