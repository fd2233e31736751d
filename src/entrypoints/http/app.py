"""The Starlette application factory."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from entrypoints.http import routes, web
from entrypoints.http.errors import EXCEPTION_HANDLERS, error_response
from entrypoints.http.openapi import openapi_document

log = logging.getLogger(__name__)


class GuardMiddleware:
    """Bearer token on /api (but healthz) when API_TOKEN is set; no cross-origin writes."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refusal = self._refusal(request)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, request: Request) -> Response | None:
        path = request.url.path
        if self.token and path.startswith("/api/") and path != "/api/healthz":
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
                return error_response(401, "UNAUTHORIZED", "A valid bearer token is required",
                                      {"WWW-Authenticate": "Bearer"})
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            origin = request.headers.get("origin")
            site = request.headers.get("sec-fetch-site")
            if site == "cross-site" or (origin and urlsplit(origin).netloc != request.headers.get("host")):
                return error_response(403, "FORBIDDEN", "Cross-origin requests are refused")
        return None


def create_app(container: Any, manage_lifecycle: bool = True) -> Starlette:
    """The app over a configured container. With `manage_lifecycle`, the process's
    supervisor starts with the app (recovery, leases, signals, adoption) and shutdown
    drains runs and closes everything."""
    settings = container.config

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        supervisor = container.supervisor() if manage_lifecycle else None
        if supervisor is not None:
            await supervisor.start()
        try:
            yield
        finally:
            if supervisor is not None:
                from entrypoints.container import close_container

                await supervisor.drain(float(settings.SHUTDOWN_TIMEOUT()))
                app.state.closing.set()
                await supervisor.close()
                await close_container(container)

    api = [
        Route("/api/chat", routes.post_chat, methods=["POST"]),
        Route("/api/chat", routes.get_chat, methods=["GET"]),
        Route("/api/chat/cancel", routes.cancel_chat, methods=["POST"]),
        Route("/api/conversations", routes.list_conversations, methods=["GET"]),
        Route("/api/conversations/{conversation_id}", routes.get_conversation, methods=["GET"]),
        Route("/api/conversations/{conversation_id}", routes.patch_conversation, methods=["PATCH"]),
        Route("/api/conversations/{conversation_id}", routes.delete_conversation, methods=["DELETE"]),
        Route("/api/conversations/{conversation_id}/export", routes.export_conversation, methods=["GET"]),
        Route("/api/healthz", routes.healthz, methods=["GET"]),
        Route("/api/readyz", routes.readyz, methods=["GET"]),
    ]

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_document())

    app = Starlette(
        routes=[*api, Route("/api/openapi.json", openapi, methods=["GET"]), *web.ROUTES],
        middleware=[Middleware(GuardMiddleware, token=settings.API_TOKEN() or "")],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=lifespan,
    )
    app.state.container = container
    app.state.closing = asyncio.Event()
    app.state.ping_seconds = float(settings.SSE_PING_SECONDS())
    return app
