"""Assistants on the LangGraph API, as langgraph-api serves them (services.assistants): the
hosted graphs' (each graph's start-up one, and those users make, versioned), then Sophos's own
`agent` unless a graph replaces it, which is the server's (its model, tools and prompt are
the settings'), so it is read but never made, changed or deleted here."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from domain.assistants import SYSTEM_METADATA, Assistant, AssistantPatch, AssistantQuery, NewAssistant
from domain.errors import InvalidInput, NotSupported
from domain.model import iso
from entrypoints.http.principal import principal_of
from entrypoints.lgapi import hosted, shapes
from entrypoints.lgapi.threads import bounded, read_body, services
from services.assistants import AssistantService

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SOPHOS_AGENT = Assistant(
    shapes.ASSISTANT_ID,
    shapes.GRAPH_ID,
    shapes.GRAPH_ID,
    {},
    {},
    SYSTEM_METADATA,
    1,
    EPOCH,
    EPOCH,
    "Sophos: a local model with MCP tools; every run durable",
)
SERVERS = "Sophos's own agent is the server's (its model, tools and prompt are set by the server's settings)"


def assistant_dict(a: Assistant) -> dict[str, Any]:
    """langgraph-api's Assistant (a version of one, from /versions, has the same keys)."""
    return {
        "assistant_id": a.assistant_id,
        "graph_id": a.graph_id,
        "config": dict(a.config),
        "context": dict(a.context),
        "metadata": dict(a.metadata),
        "name": a.name,
        "description": a.description,
        "version": a.version,
        "created_at": iso(a.created_at),
        "updated_at": iso(a.updated_at),
    }


def service(request: Request) -> AssistantService:
    found = services(request).assistants
    if found is None:
        raise NotSupported("Assistants are not served here")
    return found()


def names_sophos_agent(request: Request, ref: object) -> bool:
    """Whether `ref` names Sophos's own agent (served when no hosted graph replaces it)."""
    return shapes.is_assistant(ref) and shapes.GRAPH_ID not in hosted.graph_ids(request)


def _extra(request: Request) -> list[Assistant]:
    return [] if shapes.GRAPH_ID in hosted.graph_ids(request) else [SOPHOS_AGENT]


async def get_assistant(request: Request) -> Response:
    ref = request.path_params["assistant_id"]
    if names_sophos_agent(request, ref):
        return JSONResponse(assistant_dict(SOPHOS_AGENT))
    return JSONResponse(assistant_dict(await service(request).get(ref, by=principal_of(request))))


async def create_assistant(request: Request) -> Response:
    fields = {"assistant_id", "graph_id", "config", "context", "metadata", "if_exists", "name", "description"}
    body = await read_body(request, fields)
    if body.get("graph_id") == shapes.GRAPH_ID and names_sophos_agent(request, shapes.GRAPH_ID):
        raise NotSupported(f"{SERVERS}: assistants are made for the hosted graphs (LANGGRAPH_JSON)")
    new = NewAssistant(
        body.get("graph_id"),  # type: ignore[arg-type]  # checked by NewAssistant
        body.get("assistant_id"),
        body.get("name"),
        body.get("description"),
        body.get("config") or {},
        body.get("context") or {},
        body.get("metadata") or {},
        body.get("if_exists") or "raise",
    )
    return JSONResponse(assistant_dict(await service(request).create(new, by=principal_of(request))))


def _query(body: dict[str, Any]) -> AssistantQuery:
    return AssistantQuery(
        body.get("graph_id"),
        body.get("name"),
        body.get("metadata") or {},
        10 if body.get("limit") is None else body["limit"],
        body.get("offset") or 0,
        body.get("sort_by"),
        body.get("sort_order"),
    )


SELECT = {
    "assistant_id",
    "graph_id",
    "name",
    "description",
    "config",
    "context",
    "metadata",
    "version",
    "created_at",
    "updated_at",
}


async def search_assistants(request: Request) -> Response:
    body = await read_body(request, {"metadata", "graph_id", "name", "limit", "offset", "sort_by", "sort_order", "select"})
    select = body.get("select")
    if select is not None and not set(select) <= SELECT:
        raise InvalidInput(f"select must name fields among {', '.join(sorted(SELECT))}")
    found = await service(request).search(_query(body), _extra(request), by=principal_of(request))
    out = [assistant_dict(a) for a in found]
    return JSONResponse([{k: v for k, v in a.items() if k in select} for a in out] if select else out)


async def count_assistants(request: Request) -> Response:
    body = await read_body(request, {"metadata", "graph_id", "name"})
    return JSONResponse(await service(request).count(_query(body), _extra(request), by=principal_of(request)))


def _refusenames_sophos_agent(request: Request) -> None:
    if names_sophos_agent(request, request.path_params["assistant_id"]):
        raise NotSupported(f"{SERVERS}: it is not changed, versioned or deleted here")


async def update_assistant(request: Request) -> Response:
    _refusenames_sophos_agent(request)
    body = await read_body(request, {"graph_id", "config", "context", "metadata", "name", "description"})
    patch = AssistantPatch(
        body.get("graph_id"),
        body.get("name"),
        body.get("description"),
        body.get("config"),
        body.get("context"),
        body.get("metadata"),
    )
    ref = request.path_params["assistant_id"]
    return JSONResponse(assistant_dict(await service(request).update(ref, patch, by=principal_of(request))))


async def delete_assistant(request: Request) -> Response:
    _refusenames_sophos_agent(request)
    if request.query_params.get("delete_threads", "").lower() == "true":
        raise NotSupported("delete_threads is not served: delete the threads (DELETE /threads/{id})")
    await service(request).delete(request.path_params["assistant_id"], by=principal_of(request))
    return Response(status_code=204)


async def assistant_versions(request: Request) -> Response:
    body = await read_body(request, {"metadata", "limit", "offset"})
    ref = request.path_params["assistant_id"]
    if names_sophos_agent(request, ref):
        return JSONResponse([assistant_dict(SOPHOS_AGENT)])
    limit, offset = bounded(body.get("limit"), "limit", 10, 1), bounded(body.get("offset"), "offset", 0)
    found = await service(request).versions(ref, body.get("metadata") or {}, limit, offset, by=principal_of(request))
    return JSONResponse([assistant_dict(a) for a in found])


async def set_latest(request: Request) -> Response:
    _refusenames_sophos_agent(request)
    body = await read_body(request, {"version"})
    version = body.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InvalidInput("version must be a positive integer")
    ref = request.path_params["assistant_id"]
    return JSONResponse(assistant_dict(await service(request).set_latest(ref, version, by=principal_of(request))))
