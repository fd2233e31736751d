"""CatalogGraphRunner: the hosted graphs of a `langgraph.json` run on the server's own
checkpointer (the configured backend's saver: fenced writes, one database) and a store.

A run's config carries the run's id under the savers' RUN_KEY, so each checkpoint it writes
is fenced by the run row (a run taken over writes nothing: RunLost). LangGraph's objects
become JSON here, as langgraph-api serialises them: a message (any pydantic model) by its
`model_dump()`, an `Interrupt` (any dataclass) by its fields."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from datetime import date, datetime
from enum import Enum
from typing import Any
from uuid import UUID

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, StateSnapshot
from pydantic import BaseModel

from adapters.graphs.catalog import AccessContext, LangGraphJsonCatalog
from adapters.langgraph.keys import KEEP_ALL_KEY, RUN_KEY
from domain.hosted import GraphChunk, GraphRun, GraphState
from ports.graphs import GraphRunner

# langgraph-api's stream mode names -> LangGraph's (`events` is astream_events: not streamed)
_MODES = {"messages-tuple": "messages", "messages": "messages"}
# what a client's `configurable` may not set: where the run reads and writes (the thread, its
# checkpoint and namespace come from the request's own fields) and the savers' keys
_RESERVED = frozenset({"thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map", RUN_KEY, KEEP_ALL_KEY})
MAX_RUN_CHECKPOINTS = 10_000  # read to find where a run began (a rollback)
_NATIVE = {"values", "updates", "custom", "debug", "tasks", "checkpoints", "messages"}


class CatalogGraphRunner(GraphRunner):
    """Runs the catalog's graphs with `checkpointer` and `store` (an InMemoryStore when none
    is given: the seam for the server's store port)."""

    def __init__(
        self,
        catalog: LangGraphJsonCatalog,
        checkpointer: BaseCheckpointSaver[Any],
        stores: Callable[[str], BaseStore] | None = None,
    ) -> None:
        self._catalog = catalog
        self._checkpointer = checkpointer
        self._stores = stores  # a user's store, for the runs of their threads (adapters/graphs/store.py)
        self._reads = InMemoryStore()  # what a factory gets to read state or draw the graph: no node runs

    def _graph(
        self,
        graph_id: str,
        access: AccessContext,
        config: Mapping[str, Any] | None = None,
        context: Any = None,
        store: BaseStore | None = None,
    ) -> Any:
        return self._catalog.graph(
            graph_id, access=access, store=store or self._reads, checkpointer=self._checkpointer, config=config, context=context
        )

    async def stream(self, run: GraphRun, run_id: str, owner: str | None = None) -> AsyncGenerator[GraphChunk, None]:
        config = run_config(run, run_id)
        names = {_MODES.get(m, m): m for m in run.stream_modes if _MODES.get(m, m) in _NATIVE}
        modes = list(names) or ["values"]
        kwargs: dict[str, Any] = {"stream_mode": modes, "subgraphs": run.subgraphs, "durability": run.durability}
        for name in ("interrupt_before", "interrupt_after"):
            nodes = getattr(run, name)
            if nodes:
                kwargs[name] = nodes if nodes == "*" else list(nodes)
        if run.context is not None:
            kwargs["context"] = run.context
        given = Command(**dict(run.command)) if run.command is not None else run.input
        store = self._stores(owner) if self._stores is not None and owner is not None else None
        async with self._graph(run.graph_id, "threads.create_run", config, run.context, store) as graph:
            async for part in graph.astream(given, config, **kwargs):
                namespace, mode, chunk = part if run.subgraphs else ((), *part)
                if mode in names:
                    yield GraphChunk(names[mode], jsonable(chunk), tuple(namespace))

    async def state(
        self, graph_id: str, thread_id: str, checkpoint_id: str | None = None, *, subgraphs: bool = False
    ) -> GraphState:
        config = _thread_config(thread_id, checkpoint_id)
        async with self._graph(graph_id, "threads.read", config) as graph:
            return graph_state(await graph.aget_state(config, subgraphs=subgraphs))

    async def history(
        self, graph_id: str, thread_id: str, *, limit: int, before: str | None = None, namespace: str = ""
    ) -> Sequence[GraphState]:
        config = _thread_config(thread_id, None, namespace)
        older = _thread_config(thread_id, before, namespace) if before else None
        async with self._graph(graph_id, "threads.read", config) as graph:
            return [graph_state(s) async for s in graph.aget_state_history(config, limit=limit, before=older)]

    async def update_state(
        self, graph_id: str, thread_id: str, values: Any, *, as_node: str | None = None, checkpoint_id: str | None = None
    ) -> str:
        config = _thread_config(thread_id, checkpoint_id)
        async with self._graph(graph_id, "threads.update", config) as graph:
            written = await graph.aupdate_state(config, values, as_node=as_node)
        return str(written["configurable"]["checkpoint_id"])

    async def began_at(self, graph_id: str, thread_id: str, run_id: str) -> str | None:
        config = _thread_config(thread_id, None)
        first = None
        async with self._graph(graph_id, "threads.read", config) as graph:
            async for snap in graph.aget_state_history(config, filter={RUN_KEY: run_id}, limit=MAX_RUN_CHECKPOINTS):
                first = snap  # newest first: the last one is the run's first
        parent = first.parent_config if first is not None else None
        return str(parent["configurable"]["checkpoint_id"]) if parent else None

    async def drawing(self, graph_id: str, *, xray: bool | int = False) -> Mapping[str, Any]:
        async with self._graph(graph_id, "assistants.read") as graph:
            drawn = await graph.aget_graph(xray=xray)
        out: dict[str, Any] = jsonable(drawn.to_json())
        return out

    async def schemas(self, graph_id: str) -> Mapping[str, Any]:
        async with self._graph(graph_id, "assistants.read") as graph:
            return {
                "graph_id": graph_id,
                "input_schema": _schema(graph.get_input_jsonschema),
                "output_schema": _schema(graph.get_output_jsonschema),
                "state_schema": _schema(lambda: graph.get_input_jsonschema() | {"title": graph.name}),
                "config_schema": _schema(graph.get_config_jsonschema),
                "context_schema": _schema(graph.get_context_jsonschema),
            }


def _schema(make: Callable[[], Any]) -> Any:
    """A schema LangGraph gives, or None where it cannot (as langgraph-api answers)."""
    try:
        return jsonable(make())
    except Exception:
        return None


def run_config(run: GraphRun, run_id: str) -> dict[str, Any]:
    """The run's RunnableConfig: the client's, with the thread, the checkpoint to start
    from, the run's id for the savers' fencing (never LangGraph's own `run_id` key in
    `configurable`, which LangGraph reads as re-entry into that run), and KEEP_ALL_KEY: a
    hosted graph's checkpoints are all kept (history, time travel, rollback read them)."""
    config = {k: v for k, v in run.config.items() if k in ("tags", "metadata", "recursion_limit", "max_concurrency")}
    given = dict(run.config.get("configurable") or {})
    configurable = {k: v for k, v in given.items() if not k.startswith("__") and k not in _RESERVED}
    configurable.update({"thread_id": run.thread_id, RUN_KEY: run_id, KEEP_ALL_KEY: True})
    if run.checkpoint_id:
        configurable["checkpoint_id"] = run.checkpoint_id
    config["configurable"] = configurable
    return config


def _thread_config(thread_id: str, checkpoint_id: str | None, namespace: str = "") -> dict[str, Any]:
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": namespace, KEEP_ALL_KEY: True}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def graph_state(snap: StateSnapshot) -> GraphState:
    """A snapshot as a GraphState; one of no saved checkpoint (an empty thread, an unknown
    checkpoint id) has no `checkpoint`."""
    tasks = tuple(_task(t) for t in snap.tasks)
    return GraphState(
        values=jsonable(snap.values),
        next=tuple(snap.next),
        tasks=tasks,
        checkpoint=_ref(snap.config) if snap.created_at is not None else None,
        parent_checkpoint=_ref(snap.parent_config),
        metadata=jsonable(snap.metadata or {}),
        created_at=snap.created_at,
        interrupts=tuple(jsonable(i) for t in snap.tasks for i in t.interrupts),
    )


def _task(task: Any) -> dict[str, Any]:
    state = task.state
    return {
        "id": task.id,
        "name": task.name,
        "path": jsonable(task.path),
        "error": f"{type(task.error).__name__}({task.error})" if task.error is not None else None,
        "interrupts": jsonable(task.interrupts),
        "checkpoint": _ref(state) if isinstance(state, Mapping) else None,
        "state": graph_state(state) if isinstance(state, StateSnapshot) else None,
        "result": jsonable(task.result) if task.result is not None else None,
    }


def _ref(config: Any) -> dict[str, Any] | None:
    if not isinstance(config, Mapping):
        return None
    configurable = config.get("configurable") or {}
    if "checkpoint_id" not in configurable:
        return None
    keys = ("thread_id", "checkpoint_ns", "checkpoint_id", "checkpoint_map")
    ref = {k: jsonable(configurable[k]) for k in keys if k in configurable}
    ref.setdefault("checkpoint_ns", "")
    return ref


def _default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, (set, frozenset)):
        return list(value)
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (UUID, bytes)):
        return str(value) if isinstance(value, UUID) else value.decode("utf-8", "replace")
    return repr(value)


def jsonable(value: Any) -> Any:
    """`value` as JSON values (what langgraph-api sends for it)."""
    return json.loads(json.dumps(value, default=_default, ensure_ascii=False))
