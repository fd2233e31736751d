"""LangGraphJsonCatalog: the graphs of a `langgraph.json`, imported once at start-up, and
each one's runnable graph for a use (a run, a state read, a schema), as langgraph-api hands
them out: a factory is called for every use with the run's config and/or a
`langgraph_sdk.runtime` ServerRuntime (its access context, and the store), and what it gives
(a graph, a StateGraph, a coroutine, or a context manager, sync or async) is entered for the
time of the use; every graph gets the server's checkpointer and store."""

from __future__ import annotations

import copy
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from types import ModuleType
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from langgraph.store.base import BaseStore

from adapters.graphs.loading import RUNTIME_CLASSES, LoadedGraph, load_graph
from adapters.graphs.setup import prepare, read_config
from domain.graphs import GraphKind, GraphLoadFailed, GraphNotFound, GraphsConfig, HostedGraph
from ports.graphs import GraphCatalog

log = logging.getLogger(__name__)

AccessContext = Literal["threads.create_run", "threads.update", "threads.read", "assistants.read"]


class LangGraphJsonCatalog(GraphCatalog):
    """The graphs of one file, or of none (`LangGraphJsonCatalog.empty()`)."""

    def __init__(self, path: str | None, loaded: Mapping[str, LoadedGraph], notices: tuple[str, ...] = ()) -> None:
        self._path = path
        self._loaded = dict(loaded)
        self._notices = notices

    @classmethod
    def empty(cls) -> LangGraphJsonCatalog:
        return cls(None, {})

    @classmethod
    def load(cls, path: str) -> LangGraphJsonCatalog:
        """Read the file, apply its env and dependencies, import every graph; GraphLoadFailed
        (one line, naming the file and the error) at the first that fails."""
        config = read_config(path)
        notices = prepare(config) + _not_applied(config)
        modules: dict[str, ModuleType] = {}
        loaded = {source.graph_id: load_graph(config, source, modules) for source in config.graphs}
        for line in notices:
            log.warning("%s", line)
        return cls(config.path, loaded, notices)

    @property
    def source(self) -> str | None:
        return self._path

    def graphs(self) -> tuple[HostedGraph, ...]:
        return tuple(entry.hosted for entry in self._loaded.values())

    def get(self, graph_id: str) -> HostedGraph:
        return self._entry(graph_id).hosted

    def notices(self) -> tuple[str, ...]:
        return self._notices

    def _entry(self, graph_id: str) -> LoadedGraph:
        entry = self._loaded.get(graph_id)
        if entry is None:
            raise GraphNotFound(f"No graph {graph_id[:128]!r} in {self._path or 'the graphs file (none is configured)'}")
        return entry

    @asynccontextmanager
    async def graph(
        self,
        graph_id: str,
        *,
        access: AccessContext,
        store: BaseStore,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        config: Mapping[str, Any] | None = None,
        context: Any = None,
    ) -> AsyncIterator[Pregel[Any, Any, Any, Any]]:
        """The graph `graph_id` for one use, with the server's checkpointer and store: a
        factory is called (with `config` and/or a ServerRuntime for `access`, `store` and,
        for a run, `context`) and what it gives is held open until the block ends.
        GraphNotFound for an unknown id; GraphLoadFailed when a factory gives no graph."""
        entry = self._entry(graph_id)
        value = entry.value
        if entry.hosted.kind is GraphKind.FACTORY:
            given = {"config": _run_config(config), "runtime": server_runtime(access, store, context)}
            value = value(*(given[arg] for arg in entry.hosted.factory_args))
        async with _entered(value) as made:
            if isinstance(made, StateGraph):
                made = made.compile()
            if not isinstance(made, Pregel):
                raise GraphLoadFailed(f"{self._path}: graph {graph_id!r}: its factory gave a {type(made).__name__}, not a graph")
            update: dict[str, Any] = {"checkpointer": checkpointer, "store": store}
            if made.name == "LangGraph":  # LangGraph's default: the graph id names it better
                update["name"] = graph_id
            yield made.copy(update=update)


def server_runtime(access: AccessContext, store: BaseStore, context: Any = None) -> Any:
    """langgraph_sdk's ServerRuntime for a factory: the execution variant (with the run's
    context) for a run, the read variant for anything else."""
    execution, read = RUNTIME_CLASSES
    if access == "threads.create_run":
        return execution(access_context=access, store=store, context=copy.copy(context))
    return read(access_context=access, store=store)


def _run_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    given = dict(config or {})
    given["configurable"] = dict(given.get("configurable") or {})
    return given


@asynccontextmanager
async def _entered(value: Any) -> AsyncIterator[Any]:
    """What a factory gave, held for the block: an async or sync context manager entered, a
    coroutine awaited, anything else as it is."""
    if hasattr(value, "__aenter__") and hasattr(value, "__aexit__"):
        async with value as made:
            yield made
    elif hasattr(value, "__enter__") and hasattr(value, "__exit__"):
        with value as made:
            yield made
    elif hasattr(value, "__await__"):
        yield await value
    else:
        yield value


def _not_applied(config: GraphsConfig) -> tuple[str, ...]:
    return tuple(
        f"{config.path}: `{key}` is not applied (Sophos keeps its own; docs/langgraph-api.md)" for key in config.not_applied
    )
