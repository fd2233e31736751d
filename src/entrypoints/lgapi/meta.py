"""/ok, /info and the assistants: one per hosted graph, and Sophos's `agent` (entrypoints.lgapi.hosted)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from domain.errors import ConversationNotFound, InvalidInput
from entrypoints.lgapi import hosted, shapes
from entrypoints.lgapi.threads import bounded, read_body, services
from services.hosted import HostedRuns


def _version() -> str:
    try:
        return version("sophos")
    except PackageNotFoundError:
        return "0"


async def ok(request: Request) -> Response:
    return JSONResponse({"ok": True})


async def info(request: Request) -> Response:
    return JSONResponse(
        {
            "version": _version(),
            "server": "sophos",
            "flags": {
                "assistants": True,
                "crons": services(request).schedules is not None,
                "langsmith": False,
                "store": services(request).store is not None,
            },
            "metadata": {},
        }
    )


def _assistant(request: Request) -> dict[str, Any]:
    wanted = request.path_params["assistant_id"]
    found = next((a for a in hosted.assistants(request) if wanted in (a["assistant_id"], a["graph_id"])), None)
    if found is None:
        raise ConversationNotFound("Assistant Not Found")
    return found


async def search_assistants(request: Request) -> Response:
    body = await read_body(request, {"metadata", "graph_id", "name", "limit", "offset", "sort_by", "sort_order", "select"})
    metadata = body.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InvalidInput("metadata must be an object")
    limit, offset = bounded(body.get("limit"), "limit", 10, 1), bounded(body.get("offset"), "offset", 0)
    found = [
        a
        for a in hosted.assistants(request)
        if body.get("graph_id") in (None, a["graph_id"])
        and body.get("name") in (None, a["name"])
        and all(a["metadata"].get(k) == v for k, v in metadata.items())
    ]
    return JSONResponse(found[offset : offset + limit])


async def count_assistants(request: Request) -> Response:
    body = await read_body(request, {"metadata", "graph_id", "name"})
    return JSONResponse(sum(1 for a in hosted.assistants(request) if body.get("graph_id") in (None, a["graph_id"])))


async def get_assistant(request: Request) -> Response:
    return JSONResponse(_assistant(request))


def _hosted_graph(request: Request) -> tuple[HostedRuns, str] | None:
    graph = hosted.graph_of(request, _assistant(request)["graph_id"])
    runner = hosted.hosted(request)
    return (runner, graph) if graph is not None and runner is not None else None


async def get_graph(request: Request) -> Response:
    found = _hosted_graph(request)
    if found is not None:
        xray = request.query_params.get("xray", "false").lower()
        depth: bool | int = int(xray) if xray.isdigit() else xray == "true"
        return JSONResponse(await found[0].runner.drawing(found[1], xray=depth))
    nodes = [
        {"id": n, "type": "runnable" if n in ("agent", "tools") else "schema", "data": n}
        for n in ("__start__", "agent", "tools", "__end__")
    ]
    edges = [
        {"source": "__start__", "target": "agent"},
        {"source": "agent", "target": "tools", "conditional": True},
        {"source": "agent", "target": "__end__", "conditional": True},
        {"source": "tools", "target": "agent"},
    ]
    return JSONResponse({"nodes": nodes, "edges": edges})


MESSAGES_SCHEMA = {
    "type": "object",
    "properties": {"messages": {"type": "array", "items": {"type": "object"}}},
    "required": ["messages"],
}


async def get_schemas(request: Request) -> Response:
    found = _hosted_graph(request)
    if found is not None:
        return JSONResponse(await found[0].runner.schemas(found[1]))
    return JSONResponse(
        {
            "graph_id": shapes.GRAPH_ID,
            "input_schema": MESSAGES_SCHEMA,
            "output_schema": MESSAGES_SCHEMA,
            "state_schema": MESSAGES_SCHEMA,
            "config_schema": {"type": "object", "properties": {}},
            "context_schema": {"type": "object", "properties": {}},
        }
    )


async def get_subgraphs(request: Request) -> Response:
    _assistant(request)
    return JSONResponse({})
