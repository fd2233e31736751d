"""A user's saved chat settings over HTTP: `GET /api/presets` (their default and named
presets), `PUT`/`DELETE /api/presets/defaults` and `PUT`/`DELETE /api/presets/named/{name}`.
Each route parses, calls the preset service, serialises; declared in ROUTES."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from domain.errors import NotSupported
from domain.model import iso
from domain.presets import PRESET_FIELDS, Preset
from entrypoints.http.principal import principal_of
from entrypoints.http.routes import read_json
from services.presets import PresetService


def _service(request: Request) -> PresetService:
    presets = request.app.state.services.presets
    if presets is None:
        raise NotSupported("This server keeps no presets")
    service: PresetService = presets()
    return service


def preset_dto(preset: Preset) -> dict[str, Any]:
    s = preset.settings
    dto: dict[str, Any] = {"model": s.model, "system": s.system, "systemMode": s.system_mode.value,
                           "updatedAt": iso(preset.updated_at)}
    return dto if preset.is_default else {"name": preset.name, **dto}


async def list_presets(request: Request) -> Response:
    saved = await _service(request).saved(by=principal_of(request))
    return JSONResponse({"defaults": preset_dto(saved.default) if saved.default else None,
                         "presets": [preset_dto(p) for p in saved.presets]})


async def put_defaults(request: Request) -> Response:
    """What the user's new conversations start with: `model`, `system`, `systemMode`."""
    body = await read_json(request, PRESET_FIELDS)
    preset = await _service(request).set_default(body, by=principal_of(request))
    return JSONResponse({"defaults": preset_dto(preset)})


async def delete_defaults(request: Request) -> Response:
    await _service(request).clear_default(by=principal_of(request))
    return Response(status_code=204)


async def put_preset(request: Request) -> Response:
    body = await read_json(request, PRESET_FIELDS)
    preset = await _service(request).save(request.path_params["name"], body, by=principal_of(request))
    return JSONResponse({"preset": preset_dto(preset)})


async def delete_preset(request: Request) -> Response:
    await _service(request).delete(request.path_params["name"], by=principal_of(request))
    return Response(status_code=204)


ROUTES = [
    Route("/api/presets", list_presets, methods=["GET"]),
    Route("/api/presets/defaults", put_defaults, methods=["PUT"]),
    Route("/api/presets/defaults", delete_defaults, methods=["DELETE"]),
    Route("/api/presets/named/{name}", put_preset, methods=["PUT"]),
    Route("/api/presets/named/{name}", delete_preset, methods=["DELETE"]),
]
