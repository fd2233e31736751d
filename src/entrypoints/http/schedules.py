"""A user's schedules over HTTP: `GET`/`POST /api/schedules`, `GET`/`PATCH`/`DELETE
/api/schedules/{id}` and `GET /api/schedules/{id}/runs` (the firings, each with its run and
its scheduled time). Each route parses, calls the schedule service, serialises; declared
in ROUTES, which the route table (entrypoints/http/api.py) takes in."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from domain.errors import NotSupported
from entrypoints.http.api_schemas import FIRING, SCHEDULE, SCHEDULE_FIELDS, UUID, closed
from entrypoints.http.openapi import Answer, ApiRoute, Param
from entrypoints.http.principal import principal_of
from entrypoints.http.routes import read_json
from entrypoints.schedule_dto import FIELDS, edit_of, firing_dto, schedules_dto, spec_of
from services.schedules import ScheduleService

ID = Param("schedule_id", "path", UUID)


def _service(request: Request) -> ScheduleService:
    schedules = request.app.state.services.schedules
    if schedules is None:
        raise NotSupported("This server keeps no schedules")
    service: ScheduleService = schedules()
    return service


async def list_schedules(request: Request) -> Response:
    service = _service(request)
    found = await service.list(by=principal_of(request))
    return JSONResponse({"schedules": await schedules_dto(service, found)})


async def post_schedule(request: Request) -> Response:
    body = await read_json(request, FIELDS | {"conversationId"})
    service = _service(request)
    made = await service.create(spec_of(body), by=principal_of(request))
    return JSONResponse({"schedule": (await schedules_dto(service, [made]))[0]}, status_code=201)


async def get_schedule(request: Request) -> Response:
    service = _service(request)
    found = await service.get(request.path_params["schedule_id"], by=principal_of(request))
    return JSONResponse({"schedule": (await schedules_dto(service, [found]))[0]})


async def patch_schedule(request: Request) -> Response:
    body = await read_json(request, FIELDS)
    service = _service(request)
    edited = await service.edit(request.path_params["schedule_id"], edit_of(body), by=principal_of(request))
    return JSONResponse({"schedule": (await schedules_dto(service, [edited]))[0]})


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
