"""Domain errors to HTTP, in one table; the `{"error": {"code", "message"}}` envelope."""

from __future__ import annotations

import logging
import math

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from domain.errors import ErrorCode, QuotaExceeded, SophosError, TooManyAttempts
from domain.model import iso, utc_now

log = logging.getLogger(__name__)

STATUS: dict[ErrorCode, int] = {
    ErrorCode.BAD_REQUEST: 400,
    ErrorCode.INVALID_EDIT: 400,
    ErrorCode.NOTHING_TO_REGENERATE: 400,
    ErrorCode.BRANCH_NOT_FOUND: 400,
    ErrorCode.UNKNOWN_MODEL: 400,
    ErrorCode.ATTACHMENT_TOO_LARGE: 413,
    ErrorCode.ATTACHMENT_TYPE_NOT_ALLOWED: 415,
    ErrorCode.ATTACHMENT_UNREADABLE: 400,
    ErrorCode.TOO_MANY_ATTACHMENTS: 400,
    ErrorCode.MODEL_CANNOT_SEE: 400,
    ErrorCode.WEBHOOK_NOT_ALLOWED: 400,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.SESSION_IN_PROGRESS: 409,
    ErrorCode.RUN_NOT_RESUMABLE: 409,
    ErrorCode.NO_ACTIVE_RUN: 409,
    ErrorCode.DECISION_REQUIRED: 409,
    ErrorCode.STALE_DECISION: 409,
    ErrorCode.SHUTTING_DOWN: 503,
    ErrorCode.STORAGE_FAILURE: 503,
    ErrorCode.SEARCH_BUSY: 503,
    ErrorCode.PDF_BUSY: 503,
    ErrorCode.TOO_MANY_ATTEMPTS: 429,
    ErrorCode.QUEUE_FULL: 429,
    ErrorCode.QUEUED_NOT_FOUND: 404,
    ErrorCode.USER_EXISTS: 409,
    ErrorCode.CONVERSATION_EXISTS: 409,
    ErrorCode.USER_LIMIT: 429,
    ErrorCode.QUOTA_EXCEEDED: 429,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.PRESET_LIMIT: 409,
    ErrorCode.ASSISTANT_EXISTS: 409,
    ErrorCode.ASSISTANT_LIMIT: 409,
    ErrorCode.GRAPH_THREAD: 409,
    ErrorCode.NOT_SUPPORTED: 501,
    ErrorCode.MODEL_UNAVAILABLE: 503,
    ErrorCode.MODEL_UNREACHABLE: 503,
    ErrorCode.MODEL_BAD_RESPONSE: 502,
    ErrorCode.ANSWER_TOO_LONG: 502,  # a run's error, never a request's: listed for completeness
}

HTTP_CODES = {
    400: "BAD_REQUEST",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    408: "REQUEST_TIMEOUT",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    422: "UNPROCESSABLE_ENTITY",  # the LangGraph API: a body field of the wrong type, as langgraph-api answers
}


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


class RouteFailure(Exception):
    """Raised by a route whose unexpected failure has its own code (FETCH_ERROR, LOAD_ERROR)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def domain_error_response(exc: SophosError) -> JSONResponse:
    if isinstance(exc, QuotaExceeded):
        # the reset time in the body (for people and the page) and as Retry-After (for clients)
        wait = max(1, math.ceil((exc.reset_at - utc_now()).total_seconds()))
        body = {"error": {"code": exc.code.value, "message": exc.message, "resetAt": iso(exc.reset_at)}}
        return JSONResponse(body, status_code=429, headers={"Retry-After": str(wait)})
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, TooManyAttempts) else None
    return error_response(STATUS.get(exc.code, 500), exc.code.value, exc.message, headers)


async def on_domain_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SophosError)
    return domain_error_response(exc)


async def on_route_failure(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RouteFailure)
    log.error("%s %s failed: %s", request.method, request.url.path, exc.__cause__, exc_info=exc.__cause__)
    return error_response(500, exc.code, exc.message)


async def on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = HTTP_CODES.get(exc.status_code, f"HTTP_{exc.status_code}")
    return error_response(exc.status_code, code, str(exc.detail), dict(exc.headers or {}))


EXCEPTION_HANDLERS = {
    SophosError: on_domain_error,
    RouteFailure: on_route_failure,
    HTTPException: on_http_error,
}  # anything else: HardeningMiddleware (headers.py) logs it once and answers 500
