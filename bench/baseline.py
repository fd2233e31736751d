"""The baseline: plain LangGraph + the official SqliteSaver, the graph of the reference
(START -> agent <-> tools -> END, ToolNode), a deterministic in-process model."""

from __future__ import annotations

import sqlite3
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from tests.support.long_thread import TEXT


@tool
def notes__save(text: str) -> str:
    """Save a note."""
    return f"saved {text}"


def build(path: str) -> tuple[Any, SqliteSaver]:
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    return graph(saver), saver


def graph(saver: BaseCheckpointSaver[Any]) -> Any:
    """The reference graph over any saver."""
    counter = {"n": 0}

    def agent(state: MessagesState) -> dict[str, Any]:
        counter["n"] += 1
        last = state["messages"][-1]
        if isinstance(last, HumanMessage):
            call = {"id": f"call_{counter['n']}", "name": "notes__save", "args": {"text": f"{counter['n']} {TEXT}"}}
            return {"messages": [AIMessage("", tool_calls=[call])]}
        return {"messages": [AIMessage(f"{counter['n']} {TEXT}")]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([notes__save]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route, ["tools", END])
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=saver)


def turn(graph: Any, thread_id: str, i: int) -> None:
    graph.invoke({"messages": [HumanMessage(f"{i} {TEXT}")]}, {"configurable": {"thread_id": thread_id}}, durability="sync")
