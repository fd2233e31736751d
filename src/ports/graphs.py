"""GraphCatalog and GraphRunner: the graphs a person brings in a `langgraph.json` (issue 44), as the server
loaded them at start-up. The catalog is built once, before the server listens: a file or
a graph that cannot be loaded has already stopped start-up (GraphLoadFailed), so a catalog
that exists holds only graphs that imported."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Protocol

from domain.graphs import HostedGraph
from domain.hosted import GraphChunk, GraphRun, GraphState


class GraphCatalog(Protocol):
    """The hosted graphs, in the file's order. Reads only: nothing here imports or runs."""

    @property
    @abstractmethod
    def source(self) -> str | None:
        """The `langgraph.json` the graphs come from (absolute); None when none is configured."""

    @abstractmethod
    def graphs(self) -> tuple[HostedGraph, ...]:
        """Every graph of the file, in its order; empty when no file is configured."""

    @abstractmethod
    def get(self, graph_id: str) -> HostedGraph:
        """The graph with that id; GraphNotFound when the file has none."""

    @abstractmethod
    def notices(self) -> tuple[str, ...]:
        """One line each for what the file asks that the server does not apply (a key Sophos
        does its own way, a listed package the environment lacks); empty when none."""


class GraphRunner(Protocol):
    """Runs hosted graphs on the server's checkpointer and store, and reads and writes their
    threads' state. A thread's checkpoints are the configured backend's (SQLite, PostgreSQL,
    memory): a run's writes are fenced by its run id, so a run that is no longer its
    process's (paused past its lease, taken over) gets RunLost and writes nothing."""

    @abstractmethod
    def stream(self, run: GraphRun, run_id: str, owner: str | None = None) -> AsyncGenerator[GraphChunk, None]:
        """Run `run` as the recorded run `run_id` of a thread `owner` owns (its nodes' store is
        that user's), its chunks as they come (JSON payloads), in
        LangGraph's order. Raises what the graph raises (GraphNotFound for an unknown graph,
        RunLost when a write is fenced off); an `interrupt()` or interrupt_before/after ends
        the stream normally (`state().waiting` then says so)."""

    @abstractmethod
    async def state(
        self, graph_id: str, thread_id: str, checkpoint_id: str | None = None, *, subgraphs: bool = False
    ) -> GraphState:
        """The thread's state at `checkpoint_id` (None: its latest; a thread with no
        checkpoint gives empty values); `subgraphs`: the tasks' subgraph states too."""

    @abstractmethod
    async def history(
        self, graph_id: str, thread_id: str, *, limit: int, before: str | None = None, namespace: str = ""
    ) -> Sequence[GraphState]:
        """The thread's states, newest first, at most `limit`, older than checkpoint `before`;
        `namespace`: a subgraph's checkpoints."""

    @abstractmethod
    async def update_state(
        self, graph_id: str, thread_id: str, values: Any, *, as_node: str | None = None, checkpoint_id: str | None = None
    ) -> str:
        """Write `values` into the thread as node `as_node` wrote them (None: as LangGraph
        picks), from `checkpoint_id` (None: the latest); the new checkpoint's id."""

    @abstractmethod
    async def began_at(self, graph_id: str, thread_id: str, run_id: str) -> str | None:
        """The checkpoint run `run_id` began from (the parent of the first it wrote), for a
        rollback; None when it wrote none or began on an empty thread."""

    @abstractmethod
    async def drawing(self, graph_id: str, *, xray: bool | int = False) -> Mapping[str, Any]:
        """The graph's nodes and edges (LangGraph's `get_graph().to_json()`, as JSON);
        `xray`: its subgraphs' too (a depth, or True for all)."""

    @abstractmethod
    async def schemas(self, graph_id: str) -> Mapping[str, Any]:
        """The graph's JSON schemas: `input_schema`, `output_schema`, `state_schema`,
        `config_schema`, `context_schema` (None for one LangGraph cannot give)."""
