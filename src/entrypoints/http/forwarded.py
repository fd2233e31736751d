"""Whom the server believes about a request's client: one setting, TRUSTED_PROXY_IPS.

A proxy in front says who the client is (`X-Forwarded-For`), whether the page was https
(`X-Forwarded-Proto`) and, with AUTH=proxy, who the user is (the user header). Any client
can write those headers too, so they are believed only when the socket's own peer is one
of the proxies. uvicorn's own rewriting is off (server.py): it would trust 127.0.0.1 by
default, so a local program could name any address to the failed-login limit, and it
would hide the socket's peer the user header is trusted by. Here uvicorn's middleware does
the rewriting with Sophos's list, and the peer stays in the scope for the user header.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from domain.errors import InvalidInput
from domain.principals import ProxyTrust, TrustedProxies

PEER = "sophos.peer"


class ForwardedMiddleware:
    """From a trusted proxy: the client's address from `X-Forwarded-For` (the right-most
    address that is not a trusted proxy) and the scheme from `X-Forwarded-Proto`; from
    anyone else, both headers are ignored. The socket's peer is kept as `sophos.peer`."""

    def __init__(self, app: ASGIApp, proxies: TrustedProxies) -> None:
        self.app = app
        # uvicorn types the ASGI protocol more narrowly than Starlette: the same protocol
        inner: Any = app
        rewrite: Any = ProxyHeadersMiddleware(inner, proxies.entries())
        self.rewrite: ASGIApp = rewrite if proxies else app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            client = scope.get("client")
            scope[PEER] = client[0] if client else ""
        await self.rewrite(scope, receive, send)


def peer_of(connection: HTTPConnection) -> str:
    """The socket's own peer (behind a proxy: the proxy), whatever the forwarded headers say."""
    peer = connection.scope.get(PEER)
    if isinstance(peer, str):
        return peer
    return connection.client.host if connection.client else ""


def named_user(connection: HTTPConnection, proxy: ProxyTrust | None) -> str | None:
    """The proxy's user header (AUTH=proxy), None when there is none. InvalidInput when it
    was sent more than once: a proxy that adds its header after one the client wrote would
    otherwise be believed by the client's (the first)."""
    if proxy is None:
        return None
    values = connection.headers.getlist(proxy.header)
    if len(values) > 1:
        raise InvalidInput(
            f"The {proxy.header} header was sent {len(values)} times: it names one user, "
            "and the proxy must replace what the client sent"
        )
    return values[0] if values else None
