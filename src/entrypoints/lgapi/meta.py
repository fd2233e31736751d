"""/ok, /info and an assistant's graph and schemas (the assistants themselves: entrypoints.lgapi.assistants)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from entrypoints.http.principal import principal_of
from entrypoints.lgapi import assistants, hosted, shapes
from entrypoints.lgapi.threads import services
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


async def _hosted_graph(request: Request) -> tuple[HostedRuns, str] | None:
    """The hosted runs and the graph of the assistant the path names; None for Sophos's own agent."""
    ref = request.path_params["assistant_id"]
    if assistants.names_sophos_agent(request, ref):
        return None
    found = await assistants.service(request).get(ref, by=principal_of(request))  # 404 for any other unknown
    runner = hosted.hosted(request)
    assert runner is not None  # the assistant's graph is hosted
    return runner, found.graph_id


async def get_graph(request: Request) -> Response:
    found = await _hosted_graph(request)
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
    found = await _hosted_graph(request)
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
    await _hosted_graph(request)  # 404 for an unknown assistant
    return JSONResponse({})
