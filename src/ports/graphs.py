"""GraphCatalog: the graphs a person brings in a `langgraph.json` (issue 44), as the server
loaded them at start-up. The catalog is built once, before the server listens: a file or
a graph that cannot be loaded has already stopped start-up (GraphLoadFailed), so a catalog
that exists holds only graphs that imported."""

from __future__ import annotations

from abc import abstractmethod
from typing import Protocol

from domain.graphs import HostedGraph


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
