"""A trivial graph for the hosted-graph figures of `make bench-peers`: one node adding one to a
counter. Served by `langgraph dev` (the bench-only venv) and by `sophos serve --langgraph-json`
from the same langgraph.json, and run by bare LangGraph in the benchmark's own process."""

from __future__ import annotations

from typing import TypedDict

from langgraph.graph import START, StateGraph


class State(TypedDict):
    n: int


def step(state: State) -> State:
    return {"n": state.get("n", 0) + 1}


builder = StateGraph(State).add_node("step", step).add_edge(START, "step")
graph = builder.compile()
