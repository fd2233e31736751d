"""A user's saved chat settings over HTTP: `GET /api/presets` (their default and named
presets), `PUT`/`DELETE /api/presets/defaults` and `PUT`/`DELETE /api/presets/named/{name}`.
Each route parses, calls the preset service, serialises; declared in ROUTES, which the route
table (entrypoints/http/api.py) takes in; with the schemas the organising fields share."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from domain.errors import NotSupported
from domain.model import iso
from domain.presets import Preset
from entrypoints.dto import settings_fields
from entrypoints.http.openapi import Answer, ApiRoute, Param, Schema
from entrypoints.http.principal import principal_of
from entrypoints.http.routes import read_json
from services.presets import PresetService

FIELDS = {"model", "system", "systemMode"}  # what a saved preset holds


def _service(request: Request) -> PresetService:
    presets = request.app.state.services.presets
    if presets is None:
        raise NotSupported("This server keeps no presets")
    service: PresetService = presets()
    return service


def preset_dto(preset: Preset) -> dict[str, Any]:
    s = preset.settings
    dto: dict[str, Any] = {
        "model": s.model,
        "system": s.system,
        "systemMode": s.system_mode.value,
        "updatedAt": iso(preset.updated_at),
    }
    return dto if preset.is_default else {"name": preset.name, **dto}


async def list_presets(request: Request) -> Response:
    saved = await _service(request).saved(by=principal_of(request))
    return JSONResponse(
        {"defaults": preset_dto(saved.default) if saved.default else None, "presets": [preset_dto(p) for p in saved.presets]}
    )


async def put_defaults(request: Request) -> Response:
    """What the user's new conversations start with: `model`, `system`, `systemMode`."""
    body = await read_json(request, FIELDS)
    preset = await _service(request).set_default(settings_fields(body), by=principal_of(request))
    return JSONResponse({"defaults": preset_dto(preset)})


async def delete_defaults(request: Request) -> Response:
    await _service(request).clear_default(by=principal_of(request))
    return Response(status_code=204)


async def put_preset(request: Request) -> Response:
    body = await read_json(request, FIELDS)
    preset = await _service(request).save(request.path_params["name"], settings_fields(body), by=principal_of(request))
    return JSONResponse({"preset": preset_dto(preset)})


async def delete_preset(request: Request) -> Response:
    await _service(request).delete(request.path_params["name"], by=principal_of(request))
    return Response(status_code=204)


MODE: Schema = {
    "type": "string",
    "nullable": True,
    "enum": ["add", "replace", None],
    "description": "add (the default): the instructions follow config/system.md; replace: instead of it",
}
SETTINGS: Schema = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "model": {"type": "string", "nullable": True, "maxLength": 200},
        "system": {"type": "string", "nullable": True, "maxLength": 16000},
        "systemMode": MODE,
    },
}
NAME = Param("name", "path", {"type": "string", "minLength": 1, "maxLength": 60})
BOOL_TEXT: Schema = {"type": "string", "enum": ["true", "false"]}
# GET /api/conversations: the archive, the pins, the organising fields (domain.organise)
LIST_PARAMS = (
    Param("archived", "query", BOOL_TEXT, description="true: the archive; false (the default): the others"),
    Param("pinned", "query", BOOL_TEXT, description="true: only pinned conversations; false: only the others"),
    Param(
        "fields",
        "query",
        {"type": "string", "enum": ["all"]},
        description="all: each summary also has pinned, archived, turns and titleBy",
    ),
)

ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        "/api/presets", "GET", list_presets, "The user's default settings for new conversations and named presets", errors=(503,)
    ),
    ApiRoute(
        "/api/presets/defaults",
        "PUT",
        put_defaults,
        "What the user's new conversations start with (the fields a first message does not name)",
        body=SETTINGS,
        errors=(400, 413),
    ),
    ApiRoute(
        "/api/presets/defaults", "DELETE", delete_defaults, "Back to the server's default for new conversations", Answer(204)
    ),
    ApiRoute(
        "/api/presets/named/{name}",
        "PUT",
        put_preset,
        "Save a preset (a model with instructions) under a name; 409 PRESET_LIMIT for a new one past 50",
        params=(NAME,),
        body=SETTINGS,
        errors=(400, 409, 413),
    ),
    ApiRoute(
        "/api/presets/named/{name}", "DELETE", delete_preset, "Delete a preset", Answer(204), params=(NAME,), errors=(400, 404)
    ),
)
