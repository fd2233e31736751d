"""Usage and the audit log over HTTP: `GET /api/usage?from=&to=[&all=true]` (a user's own
rows; an admin's `all=true` adds everyone's) and `GET /api/audit?since=&limit=` (admins
only). Read-only: no route changes or deletes a usage or audit row. Declared in ROUTES,
which the route table (entrypoints/http/api.py) takes in."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from domain.errors import InvalidInput, NotSupported
from entrypoints.dto import audit_dto, parse_since, usage_dto
from entrypoints.http.api_schemas import AUDIT_ROWS, TEXT, USAGE_ROWS
from entrypoints.http.openapi import Answer, ApiRoute, Param
from entrypoints.http.principal import principal_of
from services.audit import AuditTrail
from services.usage import UsageService, parse_day


def parse_limit(value: str | None) -> int:
    if value is None:
        return 1000
    if not value.isdigit() or not 1 <= int(value) <= 10_000:
        raise InvalidInput("`limit` is a number from 1 to 10000")
    return int(value)


def _usage(request: Request) -> UsageService:
    getter = request.app.state.services.usage
    if getter is None:
        raise NotSupported("This server keeps no usage")
    service: UsageService = getter()
    return service


def _audit(request: Request) -> AuditTrail:
    getter = request.app.state.services.audit
    if getter is None:
        raise NotSupported("This server keeps no audit log")
    trail: AuditTrail = getter()
    return trail


async def get_usage(request: Request) -> Response:
    q = request.query_params
    if q.get("all", "false") not in ("true", "false"):
        raise InvalidInput("`all` is true or false")
    first, last = parse_day(q.get("from"), "from"), parse_day(q.get("to"), "to")
    rows = await _usage(request).report(first, last, everyone=q.get("all") == "true", by=principal_of(request))
    return JSONResponse({"rows": [usage_dto(r) for r in rows]})


async def get_audit(request: Request) -> Response:
    q = request.query_params
    since, limit = parse_since(q.get("since")), parse_limit(q.get("limit"))
    entries = await _audit(request).entries(since, limit, by=principal_of(request))
    return JSONResponse({"entries": [audit_dto(e) for e in entries]})


DAY = {"type": "string", "format": "date"}
ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        "/api/usage",
        "GET",
        get_usage,
        "Tokens and seconds per user, model and UTC day (the last 30 days by default): the user's own; "
        "an admin's all=true adds every user's (403 FORBIDDEN for others)",
        Answer(schema=USAGE_ROWS),
        params=(
            Param("from", "query", DAY, description="first day, UTC (YYYY-MM-DD)"),
            Param("to", "query", DAY, description="last day, UTC (YYYY-MM-DD; default today)"),
            Param("all", "query", {"type": "string", "enum": ["true", "false"]}, description="true: every user's (admins)"),
        ),
        errors=(400, 403, 503),
    ),
    ApiRoute(
        "/api/audit",
        "GET",
        get_audit,
        "The audit log, oldest first (admins only: 403 FORBIDDEN for others); append-only, nothing changes its rows",
        Answer(schema=AUDIT_ROWS),
        params=(
            Param("since", "query", TEXT, description="from this ISO date or time on (UTC unless it names a zone)"),
            Param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 10000}),
        ),
        errors=(400, 403, 503),
    ),
)
