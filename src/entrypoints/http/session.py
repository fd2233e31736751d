"""Browser login: the API token, entered once in the page, exchanged for a session cookie.

An EventSource cannot send an `Authorization` header, so the page authenticates with a
cookie instead. The cookie holds a random session id, stored server-side as a hash with a
fixed end (SESSION_SECONDS): log-out deletes it, so a copied cookie stops working too, and
"log out everywhere" deletes them all. Its name carries the server's port: browsers send
cookies to every port of a host, and another server on 127.0.0.1 must not receive ours. It
is HttpOnly (page scripts cannot read it), SameSite=Strict (no other site's page makes the
browser send it), and Secure when the page was served over https. Writes keep the guard's
Origin check, so the cookie opens no cross-site request forgery.
"""

from __future__ import annotations

from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response

from domain.errors import InvalidInput, StorageFailure
from domain.principals import Principal
from domain.sessions import attempt_source
from entrypoints.bundle import Services
from entrypoints.http.errors import error_response
from entrypoints.http.forwarded import named_user, peer_of
from entrypoints.http.principal import principal_of
from entrypoints.http.routes import read_json
from services.sessions import SessionService, token_bytes

PATH = "/api/session"
EVERYWHERE_PATH = "/api/session/all"


def cookie_name(port: int) -> str:
    return f"sophos_session_{port}"


def bearer_credentials(header: str) -> bytes | None:
    """The credentials of an `Authorization: Bearer …` header as the bytes the client sent
    (the scheme is case-insensitive), or None for another scheme."""
    scheme, _, credentials = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    # Starlette decodes header bytes as latin-1: encoding back gives the bytes sent, so a
    # UTF-8 token compares equal to the same token set in API_TOKEN
    return credentials.strip().encode("latin-1", "replace")


def client_address(request: HTTPConnection) -> str:
    return attempt_source(request.client.host) if request.client else "unknown"


def _sessions(request: Request) -> SessionService:
    services: Services = request.app.state.services
    return services.sessions()


def _cookie(request: Request) -> str:
    return str(request.app.state.session_cookie)


async def resolve(request: Request, sessions: SessionService, cookie: str) -> Principal | None:
    """Whom the request acts as: a bearer token (which then decides alone: a wrong one
    counts as a failed login), else a live session cookie; None when neither names anyone.
    TooManyAttempts when a bearer comes from an address that failed too often lately;
    InvalidInput for a proxy's user header sent twice."""
    named = named_user(request, sessions.proxy)
    if named is not None:
        found = await sessions.principal_of_proxy(named, peer_of(request))
        if found is not None:
            return found
    given = bearer_credentials(request.headers.get("authorization", ""))
    if given is not None:
        return await sessions.principal_of_bearer(given, client_address(request))
    return await sessions.principal_of_session(request.cookies.get(cookie, ""))


async def still_allowed(request: Request, sessions: SessionService, cookie: str) -> bool:
    """Whether the request's credentials still name someone (for a stream in progress): as
    `resolve`, but a bearer that stopped working is not counted as a failed login. While
    the storage cannot answer, a stream that was allowed stays open: it then carries the
    run's own STORAGE_FAILURE to its end, and the next check decides."""
    try:
        return await _still_allowed(request, sessions, cookie)
    except StorageFailure:
        return True


async def _still_allowed(request: Request, sessions: SessionService, cookie: str) -> bool:
    if not await sessions.needed():
        return True
    named = named_user(request, sessions.proxy)
    if named is not None and await sessions.principal_of_proxy(named, peer_of(request)):
        return True
    given = bearer_credentials(request.headers.get("authorization", ""))
    if given is not None:
        return await sessions.bearer_still_valid(given)
    return await sessions.principal_of_session(request.cookies.get(cookie, "")) is not None


def _state(who: Principal | None) -> dict[str, object]:
    """A needed login's state: whether there is one, and whose (the page's header names them)."""
    body: dict[str, object] = {"required": True, "authenticated": who is not None}
    if who is not None:
        body["user"] = {"name": who.name, "role": who.role.value}
    return body


async def get_session(request: Request) -> Response:
    """Whether a login is needed, whether this browser has one, and as whom."""
    sessions = _sessions(request)
    if not await sessions.needed():
        return JSONResponse({"required": False, "authenticated": True})
    return JSONResponse(_state(await resolve(request, sessions, _cookie(request))))


async def login(request: Request) -> Response:
    body = await read_json(request, {"token"})
    given = body.get("token")
    if not isinstance(given, str) or not given:
        raise InvalidInput("token is required")
    sessions = _sessions(request)
    if not await sessions.needed():
        return JSONResponse({"required": False, "authenticated": True})
    session_id = await sessions.login(token_bytes(given), client_address(request))
    if session_id is None:
        # the single-token wording, unchanged, until users exist
        users = " nor a user's token" if sessions.users_seen else ""
        return error_response(401, "UNAUTHORIZED", f"That token is not the server's API_TOKEN{users}")
    response = JSONResponse(_state(await sessions.principal_of_session(session_id)))
    response.set_cookie(
        _cookie(request),
        session_id,
        max_age=int(sessions.lifetime_seconds),
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


def _logged_out(request: Request) -> Response:
    response = Response(status_code=204)
    response.delete_cookie(_cookie(request), path="/", httponly=True, samesite="strict", secure=request.url.scheme == "https")
    return response


async def logout(request: Request) -> Response:
    """Ends this browser's session on the server, not only its cookie."""
    await _sessions(request).logout(request.cookies.get(_cookie(request), ""))
    return _logged_out(request)


async def logout_everywhere(request: Request) -> Response:
    """Ends every session of the caller (the guard lets only an authenticated request this far)."""
    await _sessions(request).logout_everywhere(principal_of(request))
    return _logged_out(request)
