"""The peer's graph, for `langgraph dev`: the shape of Sophos's (START -> agent <-> tools -> END,
one `tools` task per call through Send, the system prompt first), on the same Ollama model.
It is run by the LangGraph Agent Server in the bench-only venv, never imported by Sophos."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_ollama import ChatOllama
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Send

SYSTEM = Path(os.environ.get("PEER_SYSTEM_PROMPT", "config/system.md")).read_text()
model = ChatOllama(model=os.environ.get("OLLAMA_MODEL", "qwen3"), base_url=os.environ["OLLAMA_HOST"], reasoning=False)


async def agent(state: MessagesState) -> dict[str, Any]:
    reply = await model.ainvoke([SystemMessage(SYSTEM), *state["messages"]])
    return {"messages": [reply]}


async def tools(task: dict[str, Any]) -> dict[str, Any]:
    call = task["call"]
    return {"messages": [ToolMessage("no tools in this benchmark", tool_call_id=call["id"], name=call["name"])]}


def route(state: MessagesState) -> Any:
    last = state["messages"][-1]
    if isinstance(last, AIMessage) and last.tool_calls:
        return [Send("tools", {"call": dict(c)}) for c in last.tool_calls]
    return END


builder = StateGraph(MessagesState)
builder.add_node("agent", agent)
builder.add_node("tools", tools)
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", route, ["tools", END])
builder.add_edge("tools", "agent")
graph = builder.compile()
