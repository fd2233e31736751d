"""The principal a request acts as, set by the guard (GuardMiddleware, LangGraphGuard) in the
request's scope and read by the routes, which pass it into the use cases."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import HTTPConnection
from starlette.types import Scope

from domain.audit import Caller
from domain.principals import Principal
from services.audit import acting

KEY = "sophos.principal"
RECHECK = "sophos.recheck"

Recheck = Callable[[], Awaitable[bool]]


def set_principal(scope: Scope, principal: Principal, recheck: Recheck | None = None) -> None:
    """`recheck`: whether the request's credentials still name someone, for a stream that
    must end once they stop (a log-out, a revoked token, a disabled user)."""
    state = scope.setdefault("state", {})
    state[KEY] = principal
    client = scope.get("client")  # the forwarded client's, behind a trusted proxy (ForwardedMiddleware)
    acting(Caller(principal.name, str(client[0]) if client else "unknown"))  # for the audit log
    if recheck is not None:
        state[RECHECK] = recheck


def recheck_of(request: HTTPConnection) -> Recheck | None:
    found = request.scope.get("state", {}).get(RECHECK)
    return found if callable(found) else None


def principal_of(request: HTTPConnection) -> Principal:
    """The guard's verdict; a route reached without one is a wiring fault, refused (never
    served as someone)."""
    found = request.scope.get("state", {}).get(KEY)
    if not isinstance(found, Principal):
        raise RuntimeError("no principal: the route was reached without the guard")
    return found
