"""The threads of hosted graphs (issue 44) on the page and `/api`: their state is the graph's,
not a conversation's, so `/api/conversations` does not list them, and reading one as a
conversation or sending it a message is refused (409 GRAPH_THREAD) instead of running
Sophos's agent on a foreign state. They are the LangGraph API's (docs/langgraph-api.md)."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import Request

from domain.hosted import GraphThread, graph_of_thread
from domain.model import Conversation
from entrypoints.bundle import Services


def _hosted(services: Services) -> tuple[str, ...]:
    return tuple(g.graph_id for g in services.graphs().graphs()) if services.graphs is not None else ()


async def graph_threads(request: Request, ids: Sequence[str]) -> dict[str, str]:
    """The graph of each of `ids` that is a hosted graph's thread (one read of their metadata)."""
    services: Services = request.app.state.services
    if not ids:
        return {}
    stored = await services.conversations().metadata(ids)
    hosted = _hosted(services)
    found = {cid: graph_of_thread(meta, hosted) for cid, meta in stored.items()}
    return {cid: graph for cid, graph in found.items() if graph is not None}


async def without_graph_threads(request: Request, conversations: Sequence[Conversation]) -> list[Conversation]:
    graphs = await graph_threads(request, [c.id for c in conversations])
    return [c for c in conversations if c.id not in graphs]


async def refuse_graph_thread(request: Request, conversation_id: str | None) -> None:
    """GraphThread when the conversation is a hosted graph's thread."""
    if conversation_id is None:
        return
    graph = (await graph_threads(request, [conversation_id])).get(conversation_id)
    if graph is not None:
        raise GraphThread(
            f"Thread {conversation_id} runs the graph {graph[:128]!r}: use the LangGraph API with its assistant, "
            "not Sophos's agent"
        )
