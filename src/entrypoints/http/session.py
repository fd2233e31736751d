"""Browser login: the API token, entered once in the page, exchanged for a session cookie.

An EventSource cannot send an `Authorization` header, so the page authenticates with a
cookie instead. The cookie holds an HMAC of the token, never the token itself: it cannot be
replayed as a bearer token, and changing API_TOKEN ends every session. It is HttpOnly (page
scripts cannot read it), SameSite=Strict (no other site's page makes the browser send it),
and Secure when the page was served over https. Writes keep the guard's Origin check, so
the cookie opens no cross-site request forgery.
"""

from __future__ import annotations

import hashlib
import hmac

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from domain.errors import InvalidInput
from entrypoints.http.errors import error_response
from entrypoints.http.routes import read_json

COOKIE = "sophos_session"
COOKIE_MAX_AGE = 30 * 24 * 3600  # seconds: the token is entered once a month per browser
PATH = "/api/session"


def token_bytes(token: str) -> bytes:
    """The configured token as bytes (an environment value may carry undecodable bytes)."""
    return token.encode("utf-8", "surrogateescape")


def session_value(token: str) -> str:
    return hmac.new(token_bytes(token), b"sophos browser session v1", hashlib.sha256).hexdigest()


def bearer_credentials(header: str) -> bytes | None:
    """The credentials of an `Authorization: Bearer …` header as the bytes the client sent
    (the scheme is case-insensitive), or None for another scheme."""
    scheme, _, credentials = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    # Starlette decodes header bytes as latin-1: encoding back gives the bytes sent, so a
    # UTF-8 token compares equal to the same token set in API_TOKEN
    return credentials.strip().encode("latin-1", "replace")


def authenticated(request: Request, token: str) -> bool:
    """Whether the request carries the token (bearer) or a valid session cookie."""
    expected = token_bytes(token)
    given = bearer_credentials(request.headers.get("authorization", ""))
    if given is not None and hmac.compare_digest(given, expected):
        return True
    cookie = request.cookies.get(COOKIE, "")
    return hmac.compare_digest(cookie.encode("latin-1", "replace"), session_value(token).encode())


def _token(request: Request) -> str:
    return str(request.app.state.api_token)


async def get_session(request: Request) -> Response:
    """Whether a login is needed and whether this browser has one."""
    token = _token(request)
    return JSONResponse({"required": bool(token), "authenticated": not token or authenticated(request, token)})


async def login(request: Request) -> Response:
    body = await read_json(request, {"token"})
    given = body.get("token")
    if not isinstance(given, str) or not given:
        raise InvalidInput("token is required")
    token = _token(request)
    if not token:
        return JSONResponse({"required": False, "authenticated": True})
    if not hmac.compare_digest(token_bytes(given), token_bytes(token)):
        return error_response(401, "UNAUTHORIZED", "That token is not the server's API_TOKEN")
    response = JSONResponse({"required": True, "authenticated": True})
    response.set_cookie(
        COOKIE,
        session_value(token),
        max_age=COOKIE_MAX_AGE,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


async def logout(request: Request) -> Response:
    response = Response(status_code=204)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict", secure=request.url.scheme == "https")
    return response


ROUTES = [
    Route(PATH, get_session, methods=["GET"]),
    Route(PATH, login, methods=["POST"]),
    Route(PATH, logout, methods=["DELETE"]),
]
