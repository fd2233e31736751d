"""A hosted graph's nodes read and write the server's store (issues 44 and 45): what a node
puts through `get_store()` is in the thread owner's namespaces, where that user's `/store/*`
finds it and another user's never does; a node in a sync function reaches it too."""

from __future__ import annotations

import json
from pathlib import Path

from langgraph_sdk import get_sync_client

from tests.integration.test_langgraph_api import wait_up
from tests.integration.test_users_server import add_user
from tests.support.app import app_env
from tests.support.server import LiveServer, free_port

GRAPH = """
from typing_extensions import TypedDict
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    note: str
    seen: list


async def remember(state):
    store = get_store()
    await store.aput(("notes",), "latest", {"text": state["note"]})
    return {}


def recall(state):  # a sync node: LangGraph runs it on a thread of its own
    found = get_store().search(("notes",))
    return {"seen": [item.value["text"] for item in found]}


builder = StateGraph(State)
builder.add_node("remember", remember)
builder.add_node("recall", recall)
builder.add_edge(START, "remember")
builder.add_edge("remember", "recall")
builder.add_edge("recall", END)
noter = builder.compile()
"""


def test_a_hosted_graphs_store_is_the_thread_owners_own(tmp_path: Path) -> None:
    (tmp_path / "graphs").mkdir()
    (tmp_path / "graphs" / "noter.py").write_text(GRAPH)
    (tmp_path / "langgraph.json").write_text(json.dumps({"graphs": {"noter": "./graphs/noter.py:noter"}}))
    lg_port = free_port()
    settings = app_env(
        tmp_path,
        MODEL_BACKEND="demo",
        TOOLS_BACKEND="none",
        LANGGRAPH_API_PORT=str(lg_port),
        LANGGRAPH_JSON=str(tmp_path / "langgraph.json"),
    )
    tokens = {name: add_user(settings, name)[1] for name in ("ann", "bob")}
    server = LiveServer(settings, tmp_path).start()
    try:
        url = f"http://127.0.0.1:{lg_port}"
        wait_up(f"{url}/ok")
        ann, bob = (get_sync_client(url=url, api_key=tokens[name]) for name in ("ann", "bob"))
        done = ann.runs.wait(ann.threads.create()["thread_id"], "noter", input={"note": "ann's lighthouse", "seen": []})
        assert done["seen"] == ["ann's lighthouse"]
        assert ann.store.get_item(["notes"], key="latest")["value"] == {"text": "ann's lighthouse"}
        assert bob.store.get_item(["notes"], key="latest") is None
        done = bob.runs.wait(bob.threads.create()["thread_id"], "noter", input={"note": "bob's harbour", "seen": []})
        assert done["seen"] == ["bob's harbour"]  # never ann's
        assert ann.store.get_item(["notes"], key="latest")["value"] == {"text": "ann's lighthouse"}
    finally:
        server.stop()
