"""/ok, /info and the one assistant (graph `agent`)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from domain.errors import ConversationNotFound, InvalidInput
from entrypoints.lgapi import shapes
from entrypoints.lgapi.threads import read_body, services


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
            "flags": {"assistants": True, "crons": False, "langsmith": False, "store": services(request).store is not None},
            "metadata": {},
        }
    )


def _assistant(request: Request) -> dict[str, Any]:
    if not shapes.is_assistant(request.path_params["assistant_id"]):
        raise ConversationNotFound("Assistant Not Found")
    return shapes.assistant()


async def search_assistants(request: Request) -> Response:
    body = await read_body(request, {"metadata", "graph_id", "name", "limit", "offset", "sort_by", "sort_order", "select"})
    found = shapes.assistant()
    metadata = body.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InvalidInput("metadata must be an object")
    keep = (
        body.get("graph_id") in (None, shapes.GRAPH_ID)
        and body.get("name") in (None, shapes.GRAPH_ID)
        and all(found["metadata"].get(k) == v for k, v in metadata.items())
        and not body.get("offset")
    )
    return JSONResponse([found] if keep else [])


async def count_assistants(request: Request) -> Response:
    await read_body(request, {"metadata", "graph_id", "name"})
    return JSONResponse(1)


async def get_assistant(request: Request) -> Response:
    return JSONResponse(_assistant(request))


async def get_graph(request: Request) -> Response:
    _assistant(request)
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
    _assistant(request)
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
