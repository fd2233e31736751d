"""`sophos graphs`: the graphs of the configured `langgraph.json` (LANGGRAPH_JSON), as
`sophos serve` loads them at start-up (each one imported, so a graph that fails is the
same one line here as there), with the id of the assistant that serves each on the
LangGraph API."""

from __future__ import annotations

import json

import click

from domain.graphs import HostedGraph
from entrypoints.cli.base import Context, global_options, pass_ctx


def graph_line(graph: HostedGraph, width: int) -> str:
    return f"{graph.graph_id:<{width}}  {graph.assistant_id}  {graph.kind_text:<24}  {graph.source}"


def graph_json(graph: HostedGraph) -> dict[str, object]:
    return {
        "graph_id": graph.graph_id,
        "assistant_id": graph.assistant_id,
        "source": graph.source,
        "kind": graph.kind.value,
        "factory_args": list(graph.factory_args),
        "description": graph.description,
    }


@click.command()
@click.option("--langgraph-json", "path", metavar="PATH", help="The langgraph.json to read (LANGGRAPH_JSON).")
@click.option("--json", "as_json", is_flag=True, help="Print the file and its graphs as JSON.")
@global_options
@pass_ctx
def graphs(ctx: Context, path: str | None, as_json: bool) -> None:
    """List the graphs of the langgraph.json (LANGGRAPH_JSON): id, assistant id, kind and source."""
    if path:
        ctx.overrides["LANGGRAPH_JSON"] = path
    catalog_of = ctx.services.graphs
    catalog = ctx.call(catalog_of) if catalog_of is not None else None
    listed = catalog.graphs() if catalog is not None else ()
    if as_json:
        click.echo(
            json.dumps(
                {"file": catalog.source if catalog else None, "graphs": [graph_json(g) for g in listed]}, ensure_ascii=False
            )
        )
        return
    if catalog is None or catalog.source is None:
        click.echo("no langgraph.json is configured: set LANGGRAPH_JSON, or give --langgraph-json PATH", err=True)
        return
    for line in catalog.notices():
        click.echo(f"note: {line}", err=True)
    width = max(len(g.graph_id) for g in listed)
    for graph in listed:
        click.echo(graph_line(graph, width))
