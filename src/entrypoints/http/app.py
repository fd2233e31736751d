"""The Starlette application factory."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from entrypoints.http import files, routes, session, transfer, web
from entrypoints.http.errors import EXCEPTION_HANDLERS
from entrypoints.http.guard import GuardMiddleware, HostPolicy
from entrypoints.http.headers import HardeningMiddleware
from entrypoints.http.openapi import openapi_document

if TYPE_CHECKING:
    from entrypoints.container import Container

log = logging.getLogger(__name__)


def create_app(container: Container, manage_lifecycle: bool = True) -> Starlette:
    """The app over a configured container. With `manage_lifecycle`, the process's
    supervisor starts with the app (recovery, leases, signals, adoption) and shutdown
    drains runs and closes everything."""
    settings = container.settings()
    services = container.services()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        supervisor = services.supervisor() if manage_lifecycle else None
        if supervisor is not None:
            await supervisor.start()
            await services.tools().warm_up()  # so the first run finds its tool servers up
        try:
            yield
        finally:
            if supervisor is not None:
                from entrypoints.container import close_container

                await supervisor.drain(settings.SHUTDOWN_TIMEOUT)
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
        Route("/api/conversations/{conversation_id}/attachments/{digest}", files.get_attachment, methods=["GET"]),
        Route("/api/conversations/{conversation_id}/fork", routes.fork_conversation, methods=["POST"]),
        Route("/api/conversations/{conversation_id}/queue/{queued_id}", routes.patch_queued, methods=["PATCH"]),
        Route("/api/conversations/{conversation_id}/queue/{queued_id}", routes.delete_queued, methods=["DELETE"]),
        Route("/api/search", routes.search, methods=["GET"]),
        Route("/api/models", routes.list_models, methods=["GET"]),
        Route("/api/export", transfer.export_all, methods=["GET"]),
        Route("/api/import", transfer.import_conversations, methods=["POST"]),
        Route("/api/approvals/always", routes.list_allow_rules, methods=["GET"]),
        Route("/api/approvals/always/{tool:path}", routes.revoke_allow_rule, methods=["DELETE"]),
        Route("/api/healthz", routes.healthz, methods=["GET"]),
        Route("/api/readyz", routes.readyz, methods=["GET"]),
    ]

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_document(request.app.state.services.attachment_limits))

    cookie = session.cookie_name(settings.PORT)
    hosts = HostPolicy.from_settings(settings.ALLOWED_HOSTS, settings.HOST)
    app = Starlette(
        routes=[
            *api,
            *session.ROUTES,
            Route("/api/openapi.json", openapi, methods=["GET"]),
            Route("/metrics", routes.metrics, methods=["GET"]),
            *web.ROUTES,
        ],
        middleware=[
            Middleware(HardeningMiddleware),
            Middleware(GuardMiddleware, token=settings.API_TOKEN, hosts=hosts, sessions=services.sessions,
                       cookie=cookie),
        ],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=lifespan,
    )
    app.state.services = services
    app.state.session_cookie = cookie
    app.state.closing = asyncio.Event()
    app.state.ping_seconds = settings.SSE_PING_SECONDS
    app.state.request_timeout = settings.REQUEST_TIMEOUT
    return app
