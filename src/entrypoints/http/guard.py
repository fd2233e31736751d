"""The request guard: which host names are served, who may write, the bearer token.

DNS rebinding: a page on `attacker.example` re-points its own name at 127.0.0.1, and the
browser then treats this server as same-origin with the attacker's page. Every such request
still carries `Host: attacker.example`, so serving only known host names closes the hole.
A host that is an IP literal is always served: no DNS name is involved, so the browser's
origin is this server's own address and nothing was rebound.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from domain.errors import SophosError, StorageFailure
from entrypoints.http.errors import domain_error_response, error_response
from entrypoints.http.principal import set_principal
from entrypoints.http.session import resolve, still_allowed
from services.sessions import SessionService

log = logging.getLogger(__name__)

LOOPBACK_NAMES = frozenset({"localhost"})
OPEN_PATHS = frozenset({"/api/healthz", "/api/session"})  # no token needed: liveness, the login itself
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
READINESS = "/api/readyz"
DEFAULT_PORTS = {"http": 80, "https": 443}
_AUTHORITY = re.compile(r"(?:\[(?P<ip6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9._-]+))(?::(?P<port>[0-9]{1,5}))?")
_ORIGIN = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<authority>[^/?#]*)")


@dataclass(frozen=True)
class Authority:
    """`host[:port]`: the host lower case, without IPv6 brackets or a trailing dot."""

    host: str
    port: int | None

    def origin_port(self, scheme: str) -> int | None:
        return self.port if self.port is not None else DEFAULT_PORTS.get(scheme)


def parse_authority(value: str) -> Authority | None:
    """A Host header (or an Origin's authority); None when it is not a plain `host[:port]`."""
    m = _AUTHORITY.fullmatch(value)
    if m is None:
        return None
    port = int(m["port"]) if m["port"] else None
    if port is not None and port > 65535:
        return None
    if m["ip6"]:
        try:
            return Authority(str(ipaddress.IPv6Address(m["ip6"])), port)
        except ValueError:
            return None
    name = m["name"].lower().rstrip(".")
    return Authority(name, port) if name else None


@functools.lru_cache(maxsize=256)  # asked on every request, of the few hosts clients name
def is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class HostPolicy:
    """The host names served: `localhost`, any IP literal, and the configured names. An entry
    `.example.com` stands for that domain and its subdomains; ports are ignored."""

    def __init__(self, entries: Iterable[str] = ()) -> None:
        self.names: set[str] = set()
        self.domains: set[str] = set()
        for raw in entries:
            entry = raw.strip()
            if not entry:
                continue
            domain = entry.startswith(".")
            parsed = parse_authority(entry[1:] if domain else entry)
            if parsed is None:
                log.warning("ALLOWED_HOSTS: ignoring %r, not a host name", entry)
            elif domain:
                self.domains.add(parsed.host)
            else:
                self.names.add(parsed.host)

    @classmethod
    def from_settings(cls, allowed_hosts: str, listen_host: str) -> HostPolicy:
        return cls([*allowed_hosts.split(","), listen_host])

    def allows(self, host: str) -> bool:
        return (
            host in LOOPBACK_NAMES
            or is_ip_literal(host)
            or host in self.names
            or any(host == d or host.endswith(f".{d}") for d in self.domains)
        )


def same_origin(origin: str, scheme: str, authority: Authority) -> bool:
    """Whether an Origin header names this request's own scheme, host and port."""
    m = _ORIGIN.fullmatch(origin)  # "null" (sandboxed frames, file: pages) never matches
    theirs = parse_authority(m["authority"]) if m else None
    if m is None or theirs is None:
        return False
    their_scheme = m["scheme"].lower()
    return (their_scheme, theirs.host, theirs.origin_port(their_scheme)) == (
        scheme,
        authority.host,
        authority.origin_port(scheme),
    )


def needs_token(path: str) -> bool:
    """The API (but the liveness probe and the login itself) and the metrics; not the page."""
    return (path.startswith("/api/") and path not in OPEN_PATHS) or path == "/metrics"


class GuardMiddleware:
    """Every route: only known hosts. /api (but healthz and the login) and /metrics: a
    bearer token or the page's session cookie (named `cookie`) naming someone, when a login
    is needed (API_TOKEN set or a user exists); the principal is put in the scope for the
    routes. /metrics: admins only. Writes: no cross-origin requests."""

    def __init__(self, app: ASGIApp, token: str, hosts: HostPolicy, sessions: Callable[[], SessionService], cookie: str) -> None:
        self.app = app
        self.token = token
        self.hosts = hosts
        self.sessions = sessions
        self.cookie = cookie

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = await self._refusal(Request(scope))
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _refusal(self, request: Request) -> Response | None:
        given = request.headers.getlist("host")
        authority = parse_authority(given[0]) if len(given) == 1 else None
        if authority is None or not self.hosts.allows(authority.host):
            log.info("refused a request for host %.100r", given[0] if given else None)
            return error_response(
                400,
                "HOST_NOT_ALLOWED",
                "This server does not answer to the host name in the request; add it to ALLOWED_HOSTS to serve it",
            )
        if needs_token(request.url.path):
            try:
                principal = await resolve(request, self.sessions(), self.cookie)
            except StorageFailure as e:
                if request.url.path != READINESS:
                    return domain_error_response(e)
                # the readiness probe reports the database itself (its own 503 says why);
                # it serves no one's data, so it needs no principal to say the storage is down
                return None
            except SophosError as e:  # too many failed logins; the session store failing
                return domain_error_response(e)
            if principal is None:
                return error_response(
                    401,
                    "UNAUTHORIZED",
                    "A valid bearer token (or a login in the page) is required",
                    {"WWW-Authenticate": "Bearer"},
                )
            if request.url.path == "/metrics" and not principal.is_admin:
                return error_response(403, "FORBIDDEN", "The metrics are for admins")
            sessions, cookie = self.sessions(), self.cookie
            set_principal(request.scope, principal, lambda: still_allowed(request, sessions, cookie))
        if request.method not in SAFE_METHODS:
            origin = request.headers.get("origin")
            cross_site = request.headers.get("sec-fetch-site") == "cross-site"
            if cross_site or (origin is not None and not same_origin(origin, request.scope["scheme"], authority)):
                return error_response(403, "FORBIDDEN", "Cross-origin requests are refused")
        return None
