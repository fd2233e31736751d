"""The principal a request acts as, set by the guard (GuardMiddleware, LangGraphGuard) in the
request's scope and read by the routes, which pass it into the use cases."""

from __future__ import annotations

from starlette.requests import HTTPConnection
from starlette.types import Scope

from domain.principals import Principal

KEY = "sophos.principal"


def set_principal(scope: Scope, principal: Principal) -> None:
    scope.setdefault("state", {})[KEY] = principal


def principal_of(request: HTTPConnection) -> Principal:
    """The guard's verdict; a route reached without one is a wiring fault, refused (never
    served as someone)."""
    found = request.scope.get("state", {}).get(KEY)
    if not isinstance(found, Principal):
        raise RuntimeError("no principal: the route was reached without the guard")
    return found
