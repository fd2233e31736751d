"""A thread whose runs run a hosted graph (its metadata `graph_id`), read and written through
that graph: its values, state (with subgraphs), history and `POST /state` (update_state,
`as_node`), as langgraph-api serves them. Any other thread goes to entrypoints.lgapi.threads."""

from __future__ import annotations

import contextlib
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from domain.commands import Cancel
from domain.errors import InvalidInput, NoActiveRun
from entrypoints.http.principal import principal_of
from entrypoints.lgapi import hosted, threads
from entrypoints.lgapi.threads import bounded, read_body, services, thread_id
from services.hosted import HostedRuns


async def _graph(request: Request) -> tuple[HostedRuns, str, str] | None:
    """(the hosted runs, the thread's graph, the thread id) when the thread's runs run a
    hosted graph; None otherwise. An unknown thread (or another user's) is 404 here."""
    cid = thread_id(request)
    runner = hosted.hosted(request)
    if runner is None or not hosted.graph_ids(request):
        return None
    await services(request).conversations().summary(cid, by=principal_of(request))
    graph = await hosted.thread_graph(request, cid)
    return (runner, graph, cid) if graph is not None else None


def _subgraphs(request: Request) -> bool:
    return request.query_params.get("subgraphs", "").lower() in ("true", "1")


async def get_thread(request: Request) -> Response:
    body = await threads.thread_body(request, thread_id(request))
    found = await _graph(request)
    if found is not None:
        runner, graph, cid = found
        state = await runner.state(graph, cid)
        body["values"] = state.values
        body["interrupts"] = {str(t["id"]): t["interrupts"] for t in state.tasks if t["interrupts"]}
    return JSONResponse(body)


async def get_state(request: Request) -> Response:
    found = await _graph(request)
    if found is None:
        return await threads.get_state(request)
    runner, graph, cid = found
    return JSONResponse(hosted.state_dict(await runner.state(graph, cid, subgraphs=_subgraphs(request))))


async def get_state_at(request: Request) -> Response:
    found = await _graph(request)
    if found is None:
        return await threads.get_state_at(request)
    runner, graph, cid = found
    at = str(request.path_params["checkpoint_id"])
    return JSONResponse(hosted.state_dict(await runner.state(graph, cid, at, subgraphs=_subgraphs(request))))


def _checkpoint_id(raw: object, name: str) -> str | None:
    """A checkpoint config (`{checkpoint_id}` or `{configurable: {checkpoint_id}}`)'s id."""
    if raw is None:
        return None
    config = raw.get("configurable") or raw if isinstance(raw, dict) else None
    wanted = config.get("checkpoint_id") if isinstance(config, dict) else None
    if not isinstance(wanted, str):
        raise InvalidInput(f"{name} must be a checkpoint config")
    return wanted


async def history(request: Request) -> Response:
    found = await _graph(request)
    if found is None:
        return await threads.history(request)
    runner, graph, cid = found
    body = await read_body(request, {"limit", "before", "metadata", "checkpoint", "select"})
    limit = bounded(body.get("limit"), "limit", 10, 1)
    checkpoint = body.get("checkpoint") or {}
    namespace = checkpoint.get("checkpoint_ns", "") if isinstance(checkpoint, dict) else ""
    states = await runner.runner.history(
        graph, cid, limit=limit, before=_checkpoint_id(body.get("before"), "before"), namespace=str(namespace or "")
    )
    return JSONResponse([hosted.state_dict(s) for s in states])


async def update_state(request: Request) -> Response:
    """`values` written as node `as_node` wrote them (langgraph-api's update_state): on the
    thread's graph, or on a hosted `agent` for a thread that has run none yet."""
    found = await _graph(request)
    graph = found[1] if found else hosted.graph_of(request, "agent")
    runner = hosted.hosted(request)
    if graph is None or runner is None:
        return await threads.update_state(request)
    body: dict[str, Any] = await read_body(request, {"values", "as_node", "checkpoint", "checkpoint_id"})
    as_node = body.get("as_node")
    if as_node is not None and not isinstance(as_node, str):
        raise InvalidInput("as_node must be a node's name")
    cid = thread_id(request)
    checkpoint = body.get("checkpoint_id") or _checkpoint_id(body.get("checkpoint"), "checkpoint")
    written = await runner.update_state(
        graph, cid, body.get("values"), as_node=as_node, checkpoint_id=checkpoint, by=principal_of(request)
    )
    return JSONResponse({"checkpoint": {"thread_id": cid, "checkpoint_ns": "", "checkpoint_id": written}})


async def delete_thread(request: Request) -> Response:
    """A hosted graph's thread is deleted with its run going, which is cancelled first, as
    langgraph-api deletes a thread (Sophos's own threads answer 409 while a run runs)."""
    found = await _graph(request)
    if found is not None:
        with contextlib.suppress(NoActiveRun):  # it ended meanwhile
            await services(request).runs().cancel(Cancel(found[2]), by=principal_of(request))
    return await threads.delete_thread(request)
