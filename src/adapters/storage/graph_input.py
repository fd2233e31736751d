"""A schedule's hosted-graph input (domain.crons.GraphInput) as stored in its `graph` column
(TEXT on SQLite and PostgreSQL): a JSON object of our own, version 1, field by field:
`v` 1; `graph_id`, `assistant_id`: strings; `input`, `config`, `context`: JSON as given;
`metadata`: an object; `stream_mode`: a list of mode names; `interrupt_before`,
`interrupt_after`: "*" or a list of node names; `subgraphs`: a boolean; `durability`:
"sync" | "async" | "exit"; `on_run_completed`: "delete" | "keep" | null."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from domain.crons import GraphInput, OnCompleted

VERSION = 1


def graph_input_dict(graph: GraphInput) -> dict[str, Any]:
    nodes = {n: v if isinstance(v, str) else list(v) for n, v in (("b", graph.interrupt_before), ("a", graph.interrupt_after))}
    return {
        "v": VERSION,
        "graph_id": graph.graph_id,
        "assistant_id": graph.assistant_id,
        "input": graph.input,
        "config": dict(graph.config),
        "context": graph.context,
        "metadata": dict(graph.metadata),
        "stream_mode": list(graph.stream_modes),
        "interrupt_before": nodes["b"],
        "interrupt_after": nodes["a"],
        "subgraphs": graph.subgraphs,
        "durability": graph.durability,
        "on_run_completed": graph.on_completed.value if graph.on_completed is not None else None,
    }


def graph_input_json(graph: GraphInput | None) -> str | None:
    return json.dumps(graph_input_dict(graph), ensure_ascii=False) if graph is not None else None


def _nodes(value: Any) -> tuple[str, ...] | str:
    return value if isinstance(value, str) else tuple(value or ())


def graph_input_of(stored: str | Mapping[str, Any] | None) -> GraphInput | None:
    """The input a `graph` column holds (a JSON text, or the object PostgreSQL decoded)."""
    if stored is None:
        return None
    d = json.loads(stored) if isinstance(stored, str) else stored
    if d.get("v") != VERSION:
        raise ValueError(f"unknown version of a schedule's graph input: {d.get('v')!r}")
    done = d.get("on_run_completed")
    return GraphInput(
        d["graph_id"],
        d["assistant_id"],
        d.get("input"),
        d.get("config") or {},
        d.get("context"),
        d.get("metadata") or {},
        tuple(d.get("stream_mode") or ("values",)),
        _nodes(d.get("interrupt_before")),
        _nodes(d.get("interrupt_after")),
        bool(d.get("subgraphs")),
        d.get("durability") or "sync",
        OnCompleted(done) if done else None,
    )
