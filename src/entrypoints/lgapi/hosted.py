"""The graphs of a `langgraph.json` on the LangGraph API (issue 44): one assistant per graph
(made at start-up, as langgraph-api does; a graph id the file also defines replaces
Sophos's `agent` here), runs through services.hosted (Sophos runs: the same lifecycle,
event log and re-join), streams of the run's own LangGraph chunks, and a thread's state,
history and updates read and written through its graph."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, replace
from typing import Any

from starlette.requests import HTTPConnection, Request

from domain.assistants import Assistant, run_settings
from domain.commands import Cancel
from domain.errors import ConversationNotFound, InvalidInput, NotSupported
from domain.graphs import assistant_id_of
from domain.hosted import PROTOCOL_MODE, STREAM_MODES, THREAD_GRAPH_KEY, GraphChunk, GraphRun, GraphState, graph_of_thread
from domain.model import Run, new_id
from entrypoints.http.principal import principal_of
from entrypoints.lgapi.stream import Projecting, sse
from entrypoints.lgapi.threads import services
from services.handles import Batch, RunStream, StartedRun
from services.hosted import HostedRuns

_WIRE = {"messages-tuple": "messages"}  # langgraph-api's event name for a mode


def assistant_id(graph_id: str) -> str:
    """The id langgraph-api gives a graph's default assistant (domain.graphs.assistant_id_of)."""
    return assistant_id_of(graph_id)


def hosted(request: HTTPConnection) -> HostedRuns | None:
    found = services(request).hosted
    return found() if found is not None else None


def graph_ids(request: HTTPConnection) -> tuple[str, ...]:
    """The hosted graphs, in the file's order (none when no file is configured)."""
    graphs = services(request).graphs
    return tuple(g.graph_id for g in graphs().graphs()) if graphs is not None else ()


def graph_of(request: HTTPConnection, assistant: object) -> str | None:
    """The hosted graph an assistant id (or graph id) names; None for any other."""
    return next((g for g in graph_ids(request) if assistant in (g, assistant_id(g))), None)


async def assistant_of(conn: HTTPConnection, ref: object) -> Assistant | None:
    """The hosted graph's assistant a run names (its id, or a hosted graph's id: the graph's
    start-up assistant), as `conn`'s caller sees it; None for Sophos's own agent or an
    unknown id (the caller answers); 404 for a hosted graph whose start-up one was deleted."""
    found = services(conn).assistants
    if found is None or not graph_ids(conn):
        return None
    return await found().resolve(ref, by=principal_of(conn))


async def thread_assistant(conn: HTTPConnection, cid: str, graph_id: str) -> Assistant:
    """The assistant a thread's runs use (its metadata `assistant_id`), or its graph's
    start-up one when that one is gone or is not the thread's graph's."""
    stored = (await services(conn).conversations().metadata([cid])).get(cid) or {}
    found = await assistant_of(conn, stored.get("assistant_id"))
    if found is not None and found.graph_id == graph_id:
        return found
    resolved = await assistant_of(conn, graph_id)
    assert resolved is not None  # graph_id is served
    return resolved


async def thread_graph(request: HTTPConnection, cid: str) -> str | None:
    """The hosted graph a thread's runs run (its metadata `graph_id`), None for Sophos's agent."""
    stored = (await services(request).conversations().metadata([cid])).get(cid) or {}
    graph = stored.get(THREAD_GRAPH_KEY)
    return graph if isinstance(graph, str) and graph in graph_ids(request) else None


async def refuse_graph_thread(request: Request, cid: str) -> None:
    """InvalidInput for a run of Sophos's agent on a thread whose runs run a graph (its
    metadata `graph_id`, served or no longer): the agent's state is not the graph's."""
    stored = (await services(request).conversations().metadata([cid])).get(cid)
    graph = graph_of_thread(stored, graph_ids(request))
    if graph is not None:
        raise InvalidInput(f"Thread {cid} runs graph {graph[:128]!r}: run it with that graph's assistant")


# --- a run request ----------------------------------------------------------------------------


def _nodes(raw: object, name: str) -> tuple[str, ...] | str:
    if raw is None:
        return ()
    if raw == "*":
        return "*"
    if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
        raise InvalidInput(f'{name} must be "*" or a list of node names')
    return tuple(raw)


def graph_run(body: dict[str, Any], cid: str, assistant: Assistant) -> GraphRun:
    """A run request's body (langgraph-api's RunCreate) as a GraphRun of `assistant`, checked:
    its config, context and metadata over the assistant's (domain.assistants.run_settings)."""
    modes = body.get("stream_mode")
    modes = [modes] if isinstance(modes, str) else modes or ["values"]
    if not isinstance(modes, list) or not all(isinstance(m, str) and m in STREAM_MODES for m in modes):
        raise InvalidInput(f"stream_mode must be among {', '.join(STREAM_MODES)} (or a list of them)")
    command, config = body.get("command"), body.get("config") or {}
    if command is not None and not isinstance(command, dict):
        raise InvalidInput("command must be an object")
    if not isinstance(config, dict) or not isinstance(config.get("configurable") or {}, dict):
        raise InvalidInput("config must be an object, its configurable too")
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidInput("metadata must be an object")
    config, context = run_settings(assistant, config, body.get("context"), metadata)
    checkpoint = body.get("checkpoint") or {}
    checkpoint_id = body.get("checkpoint_id") or (checkpoint.get("checkpoint_id") if isinstance(checkpoint, dict) else None)
    return GraphRun(
        assistant.graph_id,
        cid,
        # useStream's `submit({}, {command})` (Agent Chat UI's inbox) sends an empty input beside
        # a command: no input, as langgraph-api takes it
        input=None if command and body.get("input") == {} else body.get("input"),
        command=command or None,
        config=config,
        context=context,
        assistant_id=assistant.assistant_id,
        stream_modes=tuple(dict.fromkeys(modes)),
        interrupt_before=_nodes(body.get("interrupt_before"), "interrupt_before"),
        interrupt_after=_nodes(body.get("interrupt_after"), "interrupt_after"),
        subgraphs=bool(body.get("stream_subgraphs")),
        checkpoint_id=checkpoint_id if isinstance(checkpoint_id, str) else None,
        durability=body.get("durability") or "sync",
    )


async def start(
    request: HTTPConnection, tid: str | None, body: dict[str, Any], assistant: Assistant, *, protocol: bool = False
) -> tuple[str, GraphRun, StartedRun]:
    """Start a run of `assistant`'s graph on thread `tid` (None: a new thread, stateless), as
    `multitask_strategy` says when the thread has a run going: reject (409), interrupt (the
    run going is cancelled first) or rollback (cancelled, and the new run starts from the
    checkpoint it began at). `protocol`: a run of LangGraph's thread protocol (its events
    are that protocol's, entrypoints.lgapi.protocol)."""
    runner, by = hosted(request), principal_of(request)
    assert runner is not None  # graph_of found the graph
    if body.get("if_not_exists") not in (None, "create", "reject"):
        raise InvalidInput('if_not_exists must be "create" or "reject"')
    strategy = body.get("multitask_strategy") or "reject"
    if strategy not in ("reject", "interrupt", "rollback", "enqueue"):
        raise InvalidInput("multitask_strategy must be reject, interrupt, rollback or enqueue")
    conversations = services(request).conversations()
    cid = tid or new_id()
    run = graph_run(body, cid, assistant)  # checked before a thread is made
    if body.get("webhook") is not None:
        run = replace(run, webhook=await services(request).webhooks().check(body["webhook"]))
    if protocol:
        run = replace(run, stream_modes=(PROTOCOL_MODE,))
    fresh = tid is None
    if not fresh and body.get("if_not_exists") == "create":
        try:
            await conversations.summary(cid, by=by)
        except ConversationNotFound:
            fresh = True
    if fresh:
        await conversations.create(cid, by=by)
    busy = not fresh and strategy != "reject" and await services(request).runs().is_active(cid)
    if busy and strategy == "enqueue":
        raise NotSupported("enqueue is not served for a hosted graph yet: use reject, interrupt or rollback")
    if busy and strategy == "rollback":
        begun = await runner.roll_back(run, by=by)
    else:
        if busy:  # interrupt: the run going is cancelled, its progress kept
            await services(request).runs().cancel(Cancel(cid), by=by)
        begun = await runner.start(run, by=by)
    return cid, run, begun


def follow(request: Request, first: Run | StartedRun, after: int = 0) -> AsyncGenerator[RunStream, None]:
    """As runs._follow: only a POST may resume a run a crash stopped."""
    runner = hosted(request)
    assert runner is not None
    return runner.follow_from(first, after, by=principal_of(request), resume=request.method == "POST")


async def values(request: Request, graph_id: str, cid: str) -> dict[str, Any]:
    """What `wait` and `join` answer: the thread's values, with `__interrupt__` when it waits."""
    runner = hosted(request)
    assert runner is not None
    state = await runner.state(graph_id, cid)
    out = dict(state.values) if isinstance(state.values, dict) else {"values": state.values}
    if state.interrupts:
        out["__interrupt__"] = list(state.interrupts)
    return out


# --- its stream ---------------------------------------------------------------------------------


@dataclass
class ChunkProjector(Projecting):
    """A hosted run's stored chunks as langgraph-api's SSE events, for the modes asked
    (`error` always): each Sophos event is at most one LangGraph event, with its id."""

    modes: tuple[str, ...]
    run_id: str

    async def begin(self) -> list[tuple[str, Any]]:
        return [("metadata", {"run_id": self.run_id, "attempt": 1})]

    async def encode(self, batch: Batch, tag: str) -> bytes:
        out: list[bytes] = []
        for event_id, event in batch:
            chunk = GraphChunk.of(event)
            if chunk is not None and (chunk.mode == "error" or chunk.mode in self.modes):
                name = _WIRE.get(chunk.mode, chunk.mode)
                out.append(sse("|".join((name, *chunk.namespace)) if chunk.namespace else name, chunk.data, f"{event_id}@{tag}"))
            elif event.event == "chat-error" and isinstance(event.data, dict) and event.data.get("code") == "RUN_LOST":
                out.append(sse("error", {"error": "RunLost", "message": event.data.get("message", "")}, f"{event_id}@{tag}"))
        return b"".join(out)


# --- a thread's state -------------------------------------------------------------------------


def state_dict(state: GraphState) -> dict[str, Any]:
    """A GraphState as langgraph-api's ThreadState."""
    return {
        "values": state.values,
        "next": list(state.next),
        "tasks": [
            {**t, "state": state_dict(t["state"]) if isinstance(t.get("state"), GraphState) else None} for t in state.tasks
        ],
        "metadata": state.metadata or {},
        "created_at": state.created_at,
        "checkpoint": state.checkpoint,
        "parent_checkpoint": state.parent_checkpoint,
        "interrupts": list(state.interrupts),
        "checkpoint_id": (state.checkpoint or {}).get("checkpoint_id"),
        "parent_checkpoint_id": (state.parent_checkpoint or {}).get("checkpoint_id"),
    }
