"""A user's schedules over HTTP: `GET`/`POST /api/schedules`, `GET`/`PATCH`/`DELETE
/api/schedules/{id}` and `GET /api/schedules/{id}/runs` (the firings, each with its run and
its scheduled time). Each route parses, calls the schedule service, serialises; declared
in ROUTES, which the route table (entrypoints/http/api.py) takes in."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from domain.errors import InvalidInput, NotSupported
from domain.model import iso, parse_conversation_id
from domain.schedules import (
    Firing,
    Schedule,
    ScheduleEdit,
    ScheduleSpec,
    Timing,
    check_message_text,
    parse_catch_up,
)
from entrypoints.http.api_schemas import FIRING, SCHEDULE, SCHEDULE_FIELDS, UUID, closed
from entrypoints.http.openapi import Answer, ApiRoute, Param
from entrypoints.http.principal import principal_of
from entrypoints.http.routes import read_json
from services.schedules import ScheduleService

FIELDS = {"cron", "at", "tz", "message", "catchUp", "endsAt", "enabled"}
ID = Param("schedule_id", "path", UUID)


def _service(request: Request) -> ScheduleService:
    schedules = request.app.state.services.schedules
    if schedules is None:
        raise NotSupported("This server keeps no schedules")
    service: ScheduleService = schedules()
    return service


def _when(value: object, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 40:
        raise InvalidInput(f"{name} must be an ISO 8601 time with an offset")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(f"{name} must be an ISO 8601 time with an offset") from None
    if parsed.tzinfo is None:
        raise InvalidInput(f"{name} must carry a time zone offset")
    return parsed


def _text(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    return value


def _flag(body: dict[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise InvalidInput(f"{name} must be true or false")
    return value


def spec_of(body: dict[str, Any]) -> ScheduleSpec:
    cid = body.get("conversationId")
    enabled = _flag(body, "enabled")
    return ScheduleSpec(
        Timing(_text(body, "cron"), _text(body, "tz") or "UTC", _when(body.get("at"), "at")),
        check_message_text(body.get("message")),
        parse_conversation_id(cid) if cid is not None else None,
        parse_catch_up(body.get("catchUp")),
        _when(body.get("endsAt"), "endsAt"),
        True if enabled is None else enabled,
    )


def edit_of(body: dict[str, Any]) -> ScheduleEdit:
    catch_up = body.get("catchUp")
    return ScheduleEdit(
        cron=_text(body, "cron"),
        tz=_text(body, "tz"),
        at=_when(body.get("at"), "at"),
        message=_text(body, "message"),
        catch_up=parse_catch_up(catch_up) if catch_up is not None else None,
        ends_at=_when(body.get("endsAt"), "endsAt"),
        clear_end="endsAt" in body and body["endsAt"] is None,
        enabled=_flag(body, "enabled"),
    )


def _iso(value: datetime | None) -> str | None:
    return iso(value) if value is not None else None


def schedule_dto(s: Schedule) -> dict[str, Any]:
    return {
        "id": s.id,
        "cron": s.timing.cron,
        "at": _iso(s.timing.at),
        "tz": s.timing.tz,
        "message": s.message,
        "conversationId": s.conversation_id,
        "catchUp": s.catch_up.value,
        "enabled": s.enabled,
        "endsAt": _iso(s.ends_at),
        "nextAt": _iso(s.next_at),
        "createdAt": iso(s.created_at),
        "lastRunId": s.last_run_id,
        "lastFiredFor": _iso(s.last_fired_for),
    }


def firing_dto(f: Firing) -> dict[str, Any]:
    return {
        "scheduledFor": iso(f.scheduled_for),
        "runId": f.run_id,
        "conversationId": f.conversation_id,
        "queued": f.queued,
        "redo": f.redo,
    }


async def list_schedules(request: Request) -> Response:
    found = await _service(request).list(by=principal_of(request))
    return JSONResponse({"schedules": [schedule_dto(s) for s in found]})


async def post_schedule(request: Request) -> Response:
    body = await read_json(request, FIELDS | {"conversationId"})
    made = await _service(request).create(spec_of(body), by=principal_of(request))
    return JSONResponse({"schedule": schedule_dto(made)}, status_code=201)


async def get_schedule(request: Request) -> Response:
    found = await _service(request).get(request.path_params["schedule_id"], by=principal_of(request))
    return JSONResponse({"schedule": schedule_dto(found)})


async def patch_schedule(request: Request) -> Response:
    body = await read_json(request, FIELDS)
    edited = await _service(request).edit(request.path_params["schedule_id"], edit_of(body), by=principal_of(request))
    return JSONResponse({"schedule": schedule_dto(edited)})


async def delete_schedule(request: Request) -> Response:
    await _service(request).delete(request.path_params["schedule_id"], by=principal_of(request))
    return Response(status_code=204)


async def schedule_runs(request: Request) -> Response:
    found = await _service(request).firings(request.path_params["schedule_id"], by=principal_of(request))
    return JSONResponse({"firings": [firing_dto(f) for f in found]})


ONE = Answer(schema={"type": "object", "properties": {"schedule": SCHEDULE}})
ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        "/api/schedules",
        "GET",
        list_schedules,
        "The user's schedules, oldest first",
        Answer(schema={"type": "object", "properties": {"schedules": {"type": "array", "items": SCHEDULE}}}),
        errors=(503,),
    ),
    ApiRoute(
        "/api/schedules",
        "POST",
        post_schedule,
        "Schedule a message: a cron expression in a time zone, or once at a time; in a conversation "
        "(conversationId) or a new one per firing",
        Answer(201, {"type": "object", "properties": {"schedule": SCHEDULE}}),
        body=closed(
            {
                **SCHEDULE_FIELDS,
                "conversationId": {**UUID, "nullable": True, "description": "null: a new conversation per firing"},
            },
            "message",
        ),
        errors=(400, 404, 413),
    ),
    ApiRoute("/api/schedules/{schedule_id}", "GET", get_schedule, "A schedule", ONE, params=(ID,), errors=(404,)),
    ApiRoute(
        "/api/schedules/{schedule_id}",
        "PATCH",
        patch_schedule,
        "Edit a schedule; pause (enabled false) or resume (enabled true: from its next firing, never catching up)",
        ONE,
        params=(ID,),
        body=closed(SCHEDULE_FIELDS),
        errors=(400, 404, 413),
    ),
    ApiRoute(
        "/api/schedules/{schedule_id}", "DELETE", delete_schedule, "Delete a schedule", Answer(204), params=(ID,), errors=(404,)
    ),
    ApiRoute(
        "/api/schedules/{schedule_id}/runs",
        "GET",
        schedule_runs,
        "The schedule's latest firings, newest first: each one's scheduled time and run",
        Answer(schema={"type": "object", "properties": {"firings": {"type": "array", "items": FIRING}}}),
        params=(ID,),
        errors=(404,),
    ),
)
