"""What the agent remembers about the user, over HTTP: `GET /api/memory` (their memories,
newest first), `PATCH /api/memory/{id}` (new text) and `DELETE /api/memory/{id}` (forget
it). Each is the caller's own: another user's memory id answers as an unknown one (404).
Declared in ROUTES, which the route table (entrypoints/http/api.py) takes in."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from domain.errors import NotSupported
from domain.model import iso
from domain.store import StoreItem
from entrypoints.http.openapi import Answer, ApiRoute, Param, Schema
from entrypoints.http.principal import principal_of
from entrypoints.http.routes import read_json
from services.memory import MAX_TEXT, MemoryService


def _service(request: Request) -> MemoryService:
    memory = request.app.state.services.memory
    if memory is None:
        raise NotSupported("This server keeps no memory")
    service: MemoryService = memory()
    return service


def memory_dto(item: StoreItem) -> dict[str, Any]:
    return {
        "id": item.key,
        "text": item.value.get("text", ""),
        "createdAt": iso(item.created_at),
        "updatedAt": iso(item.updated_at),
    }


async def list_memories(request: Request) -> Response:
    service, by = _service(request), principal_of(request)
    found = await service.list(by=by)
    return JSONResponse({"memories": [memory_dto(m) for m in found], "enabled": await service.enabled(by.user_id)})


async def switch_memory(request: Request) -> Response:
    body = await read_json(request, {"enabled"})
    enabled = await _service(request).set_enabled(body.get("enabled"), by=principal_of(request))
    return JSONResponse({"enabled": enabled})


async def edit_memory(request: Request) -> Response:
    body = await read_json(request, {"text"})
    edited = await _service(request).edit(request.path_params["id"], body.get("text"), by=principal_of(request))
    return JSONResponse({"memory": memory_dto(edited)})


async def forget_memory(request: Request) -> Response:
    await _service(request).forget(request.path_params["id"], by=principal_of(request))
    return Response(status_code=204)


MEMORY: Schema = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "text": {"type": "string"},
        "createdAt": {"type": "string", "format": "date-time"},
        "updatedAt": {"type": "string", "format": "date-time"},
    },
}
ID = Param("id", "path", {"type": "string", "minLength": 1, "maxLength": 512})

ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        "/api/memory",
        "GET",
        list_memories,
        "What the agent remembers about the user (MEMORY_BACKEND=store), newest first",
        Answer(
            schema={
                "type": "object",
                "properties": {
                    "memories": {"type": "array", "items": MEMORY},
                    "enabled": {"type": "boolean", "description": "false: the user turned memory off"},
                },
            }
        ),
        errors=(503,),
    ),
    ApiRoute(
        "/api/memory",
        "PATCH",
        switch_memory,
        "Turn the user's memory on or off (off: no memory tool is offered in their conversations; memories are kept)",
        Answer(schema={"type": "object", "properties": {"enabled": {"type": "boolean"}}}),
        body={
            "type": "object",
            "additionalProperties": False,
            "required": ["enabled"],
            "properties": {"enabled": {"type": "boolean"}},
        },
        errors=(400, 503),
    ),
    ApiRoute(
        "/api/memory/{id}",
        "PATCH",
        edit_memory,
        "Change a memory's text",
        Answer(schema={"type": "object", "properties": {"memory": MEMORY}}),
        params=(ID,),
        body={
            "type": "object",
            "additionalProperties": False,
            "required": ["text"],
            "properties": {"text": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT}},
        },
        errors=(400, 404, 413),
    ),
    ApiRoute("/api/memory/{id}", "DELETE", forget_memory, "Forget a memory", Answer(204), params=(ID,), errors=(404,)),
)
