"""Agent Chat UI (as test_agent_chat_ui.py builds and serves it) in Chromium against hosted
graphs (issue 44): the sdk suite's own `agent` graph (langgraph-sdk's sdist, integration/graph)
streams its message and tool call into the UI and waits at its `interrupt()`; and a user's
graph whose `interrupt()` asks in the Agent Inbox's shape is answered in the UI's inbox, its
node going on once."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from langgraph_sdk import get_sync_client
from playwright.sync_api import Browser, expect

from tests.browser.conftest import open_page
from tests.browser.test_agent_chat_ui import KEY, dist, send, static  # noqa: F401 (fixtures)
from tests.support.app import app_env
from tests.support.sdk_suite import graph_packages, sdist_root
from tests.support.server import LiveServer, free_port

INBOX_GRAPH = """
import os
from typing import Annotated
from typing_extensions import TypedDict
from langchain_core.messages import AIMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt


class State(TypedDict):
    messages: Annotated[list, add_messages]


def charge(state):
    answer = interrupt([{
        "action_request": {"action": "charge", "args": {"amount": 7}},
        "config": {"allow_accept": True, "allow_edit": False, "allow_respond": False, "allow_ignore": True},
        "description": "Charge 7?",
    }])
    with open(os.environ["INBOX_TEST_LOG"], "a") as log:  # what runs after the answer, once per answer
        log.write(f"charged:{answer[0]['type']}\\n")
    return {"messages": [AIMessage(content=f"charge answered: {answer[0]['type']}")]}


builder = StateGraph(State)
builder.add_node("charge", charge)
builder.add_edge(START, "charge")
builder.add_edge("charge", END)
graph = builder.compile()
"""


@contextmanager
def hosting(tmp: Path, origin: str) -> Iterator[str]:
    """`sophos serve` hosting the suite's four graphs and `inbox` (the packages the suite's
    graphs import from its cache dir, listed as a dependency): its LangGraph API's URL."""
    suite = sdist_root() / "integration"
    (tmp / "inbox.py").write_text(INBOX_GRAPH)
    graphs = json.loads((suite / "langgraph.json").read_text())["graphs"]
    config = {
        "dependencies": [str(suite / "graph"), str(graph_packages())],
        "graphs": {**{g: str(suite / p.removeprefix("./")) for g, p in graphs.items()}, "inbox": "./inbox.py:graph"},
        "env": {"INBOX_TEST_LOG": str(tmp / "inbox.log")},
    }
    (tmp / "langgraph.json").write_text(json.dumps(config))
    lg_port = free_port()
    env = app_env(
        tmp,
        TOOLS_BACKEND="none",
        MODEL_BACKEND="demo",
        LANGGRAPH_JSON=str(tmp / "langgraph.json"),
        LANGGRAPH_API_PORT=str(lg_port),
        LANGGRAPH_API_CORS_ORIGINS=origin,
        API_TOKEN=KEY,
    )
    server = LiveServer(env, tmp).start(timeout=120)
    url = f"http://127.0.0.1:{lg_port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/ok").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the LangGraph API did not come up"
            time.sleep(0.05)
        yield url
    finally:
        server.stop()


def keyed(origin: str) -> dict[str, Any]:
    stored = [{"name": "lg:chat:apiKey", "value": KEY}]
    return {"storage_state": {"cookies": [], "origins": [{"origin": origin, "localStorage": stored}]}}


@pytest.fixture(scope="module")
def graphs_ui(static: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:  # noqa: F811
    tmp = tmp_path_factory.mktemp("agentchat-graphs")
    with hosting(tmp, static) as lg:
        yield static, lg, tmp


def test_the_suite_s_agent_graph_streams_its_message_and_tool_call_and_waits_at_its_interrupt(
    browser: Browser, graphs_ui: tuple[str, str, Path]
) -> None:
    """This version of the UI renders no interrupt under a tool result, where the suite's
    graph asks (ask_human follows call_tool): the thread waits there, as the state says; the
    next test answers an interrupt in the inbox."""
    origin, lg, _ = graphs_ui
    url = f"{origin}/?{urlencode({'apiUrl': lg, 'assistantId': 'agent'})}"
    with open_page(browser, url, "agent-chat-ui-suite-agent", **keyed(origin)) as page:
        send(page, "hello, graph")
        expect(page.get_by_text("Hello, world!", exact=True)).to_be_visible(timeout=30_000)  # stream_message's
        expect(page.get_by_text("result for 'v3'")).to_be_visible(timeout=30_000)  # call_tool's
        page.wait_for_url("**threadId=*", timeout=10_000)
        tid = page.url.split("threadId=")[1].split("&")[0]
        client = get_sync_client(url=lg, api_key=KEY)
        thread = client.threads.get(tid)
        assert thread["status"] == "interrupted" and thread["metadata"]["graph_id"] == "agent"
        state = client.threads.get_state(tid)
        assert state["next"] == ["ask_human"] and state["values"]["items"] == ["streamed", "tool"]


def test_an_interrupt_in_the_inbox_s_shape_is_answered_there_and_its_node_goes_on_once(
    browser: Browser, graphs_ui: tuple[str, str, Path]
) -> None:
    origin, lg, tmp = graphs_ui
    url = f"{origin}/?{urlencode({'apiUrl': lg, 'assistantId': 'inbox'})}"
    with open_page(browser, url, "agent-chat-ui-graph-inbox", **keyed(origin)) as page:
        send(page, "charge me")
        page.get_by_role("button", name="Accept", exact=True).click(timeout=30_000)
        expect(page.get_by_text("charge answered: accept")).to_be_visible(timeout=30_000)
        tid = page.url.split("threadId=")[1].split("&")[0]
        client = get_sync_client(url=lg, api_key=KEY)
        assert client.threads.get(tid)["status"] == "idle"
        assert [r["status"] for r in client.runs.list(tid)] == ["success", "success"]
        assert (tmp / "inbox.log").read_text().split() == ["charged:accept"]  # once
