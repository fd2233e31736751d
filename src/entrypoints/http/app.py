"""The Starlette application factory."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route

from domain.principals import TrustedProxies
from entrypoints.http import api, routes, session, web
from entrypoints.http.errors import EXCEPTION_HANDLERS
from entrypoints.http.forwarded import ForwardedMiddleware
from entrypoints.http.guard import GuardMiddleware, HostPolicy
from entrypoints.http.headers import HardeningMiddleware

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

    cookie = session.cookie_name(settings.PORT)
    hosts = HostPolicy.from_settings(settings.ALLOWED_HOSTS, settings.HOST)
    app = Starlette(
        routes=[
            *(Route(r.path, r.endpoint, methods=[r.method]) for r in api.ROUTES),
            Route("/metrics", routes.metrics, methods=["GET"]),
            *web.ROUTES,
        ],
        middleware=[
            Middleware(HardeningMiddleware),
            Middleware(ForwardedMiddleware, proxies=TrustedProxies(settings.TRUSTED_PROXY_IPS)),
            Middleware(GuardMiddleware, token=settings.API_TOKEN, hosts=hosts, sessions=services.sessions, cookie=cookie),
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
