"""The LangGraph API's guard: the main API's host allow-list (DNS rebinding), API_TOKEN as
LangGraph clients send it (`X-Api-Key`, or a bearer), and CORS for the browser clients
(Agent Chat UI, Studio) named in LANGGRAPH_API_CORS_ORIGINS.

There is no cookie here, but a browser still carries ambient credentials: none at all on a
server that needs no login (every request is the admin), or a proxy's login (AUTH=proxy).
So a request from another origin is served only with a token it sends itself, which a
page has only if someone gave it one: `sophos serve` refuses CORS origins on a server
that needs no login, and here such a request without a token is 401. Writes from an
origin not allowed are refused (403); reads are answered without CORS headers, so the
browser keeps them from the page, and no GET starts a run (runs.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from starlette.datastructures import Headers
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocketClose

from domain.errors import SophosError, StorageFailure
from entrypoints.http.errors import domain_error_response, error_response
from entrypoints.http.forwarded import named_user, peer_of
from entrypoints.http.guard import HostPolicy, parse_authority, same_origin
from entrypoints.http.principal import set_principal
from entrypoints.http.session import bearer_credentials, client_address
from services.sessions import SessionService

log = logging.getLogger(__name__)

OPEN_PATHS = frozenset({"/ok"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
ALLOW_HEADERS = "Authorization, Content-Type, X-Api-Key, Last-Event-ID, X-Auth-Scheme, Cache-Control"
EXPOSE_HEADERS = "Content-Location, Location"


class CorsPolicy:
    """Origins allowed to call from a browser: `*` for any, or a comma-separated list."""

    def __init__(self, setting: str) -> None:
        entries = {o.strip().rstrip("/") for o in setting.split(",") if o.strip()}
        self.any = "*" in entries
        self.origins = entries - {"*"}

    def allows(self, origin: str) -> bool:
        return self.any or origin in self.origins


def _given_token(headers: Headers) -> bytes | None:
    key = headers.get("x-api-key")
    if key is not None:
        return key.strip().encode("latin-1", "replace")
    return bearer_credentials(headers.get("authorization", ""))


class LangGraphGuard:
    def __init__(
        self, app: ASGIApp, token: str, hosts: HostPolicy, cors: CorsPolicy, sessions: Callable[[], SessionService]
    ) -> None:
        self.app = app
        self.token = token
        self.hosts = hosts
        self.cors = cors
        self.sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        origin = request.headers.get("origin")
        allowed_origin = origin if origin is not None and self.cors.allows(origin) else None
        refusal = await self._refusal(request, request.method, origin, allowed_origin)
        if refusal is None and request.method == "OPTIONS" and allowed_origin is not None:
            refusal = Response(
                status_code=204,
                headers={
                    "Access-Control-Allow-Methods": "GET, POST, PATCH, DELETE, OPTIONS",
                    "Access-Control-Allow-Headers": ALLOW_HEADERS,
                    "Access-Control-Max-Age": "600",
                },
            )
        target = refusal if refusal is not None else self.app

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start" and allowed_origin is not None:
                headers = list(message.get("headers", []))
                headers += [
                    (b"access-control-allow-origin", allowed_origin.encode("latin-1")),
                    (b"access-control-expose-headers", EXPOSE_HEADERS.encode()),
                    (b"vary", b"Origin"),
                ]
                message = {**message, "headers": headers}
            await send(message)

        await target(scope, receive, send_with_cors)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A websocket's handshake, guarded as a write: the host, the origin (one not allowed
        is refused, as a cross-origin write is), the token; refused, it is closed before it
        is accepted (1008: the client sees its handshake refused)."""
        conn = HTTPConnection(scope)
        origin = conn.headers.get("origin")
        allowed_origin = origin if origin is not None and self.cors.allows(origin) else None
        refusal = await self._refusal(conn, "WEBSOCKET", origin, allowed_origin)
        if refusal is not None:
            await WebSocketClose(code=1008, reason=f"refused ({refusal.status_code})")(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _refusal(
        self, request: HTTPConnection, method: str, origin: str | None, allowed_origin: str | None
    ) -> Response | None:
        given = request.headers.getlist("host")
        authority = parse_authority(given[0]) if len(given) == 1 else None
        if authority is None or not self.hosts.allows(authority.host):
            return error_response(
                400,
                "HOST_NOT_ALLOWED",
                "This server does not answer to the host name in the request; add it to ALLOWED_HOSTS to serve it",
            )
        cross = (origin is not None and not same_origin(origin, request.scope["scheme"], authority)) or (
            request.headers.get("sec-fetch-site") == "cross-site"
        )
        if cross and allowed_origin is None and (method not in SAFE_METHODS or method == "OPTIONS"):
            return error_response(
                403, "FORBIDDEN", "Cross-origin requests are refused; allow the origin with LANGGRAPH_API_CORS_ORIGINS"
            )
        if method == "OPTIONS" or request.url.path in OPEN_PATHS:
            return None
        credentials = _given_token(request.headers)
        if cross and credentials is None:
            # a page of another origin acts only with a token it was given: never as the
            # tokenless admin, nor as the user a proxy's login in this browser names
            return error_response(
                401,
                "UNAUTHORIZED",
                "A request from another origin needs a token (X-Api-Key or a bearer)",
                {"WWW-Authenticate": "Bearer"},
            )
        sessions = self.sessions()
        peer = peer_of(request)
        try:
            named = named_user(request, sessions.proxy)
            # AUTH=proxy: believed from a trusted peer only (from another, ignored and logged)
            principal = await sessions.principal_of_proxy(named, peer) if named is not None else None
            if principal is None and credentials is None:
                # no credentials: the bootstrap admin while no login is needed, else refused
                principal = await sessions.principal_of_session("") if not await sessions.needed() else None
            elif principal is None and credentials is not None:
                principal = await sessions.principal_of_bearer(credentials, client_address(request))
        except SophosError as e:  # a repeated user header; too many failed attempts; the store failing
            return domain_error_response(e)
        if principal is None:
            return error_response(
                401,
                "UNAUTHORIZED",
                "The server's API_TOKEN or a user's token is required (X-Api-Key or a bearer)",
                {"WWW-Authenticate": "Bearer"},
            )
        set_principal(request.scope, principal, partial(_still_allowed, sessions, named, peer, credentials))
        return None


async def _still_allowed(sessions: SessionService, named: str | None, peer: str, credentials: bytes | None) -> bool:
    """Whether the request's credentials still name someone, for a stream in progress (as the
    main API's streams ask): a revoked token, a disabled user or a login now needed end it.
    While the storage cannot answer, it stays open and carries the run's own failure."""
    try:
        if not await sessions.needed():
            return True
        if named is not None and await sessions.principal_of_proxy(named, peer) is not None:
            return True
        if credentials is not None:
            return await sessions.bearer_still_valid(credentials)
        return False
    except StorageFailure:
        return True
