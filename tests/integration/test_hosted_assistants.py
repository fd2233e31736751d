"""Assistants of hosted graphs against a real `sophos serve`, through the pinned langgraph-sdk
(issue 44): made, updated (a new version each), pinned to an older version and deleted as
langgraph-api does, kept in the database across a restart; a run with one uses its config,
context and metadata under the run's own, and the thread's runs list the assistant each used;
with users on, another user's assistant answers as unknown."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError

from domain.graphs import assistant_id_of
from tests.integration.test_hosted_graphs import wait_for
from tests.integration.test_users_server import add_user
from tests.support.app import app_env
from tests.support.server import LiveServer, free_port

GRAPH = """
from typing_extensions import TypedDict
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import get_runtime


class State(TypedDict, total=False):
    seen: dict


def look(state):  # what the run was given: the test reads it back from the state
    config = get_config()
    kept = ("model", "temp", "assistant_id", "graph_id")
    return {"seen": {
        "configurable": {k: v for k, v in config["configurable"].items() if k in kept},
        "metadata": {k: v for k, v in config["metadata"].items() if k in ("team", "run", "assistant_id")},
        "context": get_runtime().context,
    }}


builder = StateGraph(State, context_schema=dict)
builder.add_node("look", look)
builder.add_edge(START, "look")
builder.add_edge("look", END)
looker = builder.compile()
"""


@contextmanager
def serving(
    tmp_path: Path, users: tuple[str, ...] = (), graphs: tuple[str, ...] = ("looker",)
) -> Iterator[tuple[SyncLangGraphClient, list[SyncLangGraphClient]]]:
    """`sophos serve` on tmp_path's database hosting GRAPH under each of `graphs`: a client
    without a token, and one with each named user's (made before the server starts)."""
    (tmp_path / "looker.py").write_text(GRAPH)
    (tmp_path / "langgraph.json").write_text(json.dumps({"graphs": dict.fromkeys(graphs, "./looker.py:looker")}))
    lg_port = free_port()
    env = app_env(
        tmp_path,
        TOOLS_BACKEND="none",
        MODEL_BACKEND="demo",
        LANGGRAPH_JSON=str(tmp_path / "langgraph.json"),
        LANGGRAPH_API_PORT=str(lg_port),
    )
    tokens = [add_user(env, name)[1] for name in users]
    server = LiveServer(env, tmp_path).start()
    url = f"http://127.0.0.1:{lg_port}"
    try:
        wait_for(lambda: httpx.get(f"{url}/ok").status_code == 200, "the LangGraph API")
        client = get_sync_client(url=url)
        client.main_url = server.url  # type: ignore[attr-defined]  # the page's /api, for the tests that need it
        yield client, [get_sync_client(url=url, api_key=t) for t in tokens]
    finally:
        server.stop()


def seen(client: SyncLangGraphClient, assistant: str, **run: Any) -> dict[str, Any]:
    tid = client.threads.create()["thread_id"]
    values = client.runs.wait(tid, assistant, input={}, **run)
    assert isinstance(values, dict)
    return {"thread": tid, **values["seen"]}


def test_a_run_with_a_made_assistant_uses_its_settings_and_the_runs_list_names_it(tmp_path: Path) -> None:
    with serving(tmp_path) as (client, _):
        made = client.assistants.create(
            "looker", config={"configurable": {"model": "m1", "temp": 0}}, metadata={"team": "x"}, name="mine"
        )
        aid = made["assistant_id"]
        assert (made["version"], made["context"], made["name"]) == (1, {"model": "m1", "temp": 0}, "mine")
        got = seen(client, aid, config={"configurable": {"model": "m2"}}, metadata={"run": True})
        assert got["configurable"] == {"model": "m2", "temp": 0, "assistant_id": aid, "graph_id": "looker"}
        assert got["metadata"] == {"team": "x", "run": True, "assistant_id": aid}
        assert got["context"] == {"model": "m2", "temp": 0}  # as langgraph-api: the run's configurable is its context too
        # the run, the thread's runs and the thread name the assistant the run used, not the graph's
        [listed] = client.runs.list(got["thread"])
        assert listed["assistant_id"] == aid
        assert client.runs.get(got["thread"], listed["run_id"])["assistant_id"] == aid
        assert client.threads.get(got["thread"])["metadata"]["assistant_id"] == aid
        # the graph's start-up assistant runs with no settings of its own
        plain = seen(client, "looker")
        assert plain["context"] is None and plain["configurable"]["assistant_id"] == assistant_id_of("looker")
        assert client.runs.list(plain["thread"])[0]["assistant_id"] == assistant_id_of("looker")


def test_updates_are_versions_one_can_be_pinned_and_they_outlive_a_restart(tmp_path: Path) -> None:
    with serving(tmp_path) as (client, _):
        aid = client.assistants.create("looker", context={"model": "a"}, metadata={"label": "one"})["assistant_id"]
        two = client.assistants.update(aid, metadata={"label": "two"})
        three = client.assistants.update(aid, context={"model": "c"})
        assert (two["version"], two["metadata"], three["version"], three["context"]) == (2, {"label": "two"}, 3, {"model": "c"})
        assert seen(client, aid)["context"] == {"model": "c"}
        pinned = client.assistants.set_latest(aid, 1)
        assert (pinned["version"], pinned["context"], pinned["metadata"]) == (1, {"model": "a"}, {"label": "one"})
        assert seen(client, aid)["context"] == {"model": "a"}  # runs use the pinned version
        with pytest.raises(NotFoundError):
            client.assistants.set_latest(aid, 7)
        with pytest.raises(ConflictError):
            client.assistants.create("looker", assistant_id=aid)
        assert client.assistants.create("looker", assistant_id=aid, if_exists="do_nothing")["version"] == 1
    with serving(tmp_path) as (client, _):  # the same database, a new process
        assert client.assistants.get(aid)["version"] == 1
        versions = client.assistants.get_versions(aid)
        assert [v["version"] for v in versions] == [3, 2, 1]
        assert [v["version"] for v in client.assistants.get_versions(aid, metadata={"label": "two"})] == [3, 2]  # 3 kept it
        assert client.assistants.count(graph_id="looker") == 2  # the start-up one and ours
        client.assistants.delete(aid)
        with pytest.raises(NotFoundError):
            client.assistants.get(aid)
        with pytest.raises(httpx.HTTPStatusError) as unknown:
            client.runs.wait(client.threads.create()["thread_id"], aid, input={})
        assert unknown.value.response.status_code == 404


def test_a_deleted_start_up_assistant_is_404_until_the_server_starts_again(tmp_path: Path) -> None:
    with serving(tmp_path) as (client, _):
        client.assistants.delete(assistant_id_of("looker"))
        with pytest.raises(NotFoundError):
            client.assistants.get("looker")
        with pytest.raises(httpx.HTTPStatusError) as gone:
            client.runs.wait(client.threads.create()["thread_id"], "looker", input={})
        assert gone.value.response.status_code == 404
    with serving(tmp_path) as (client, _):  # as langgraph-api: made again at start-up
        assert client.assistants.get("looker")["assistant_id"] == assistant_id_of("looker")


def test_with_users_on_another_user_s_assistant_answers_as_unknown(tmp_path: Path) -> None:
    with serving(tmp_path, users=("ann", "bob")) as (_, (ann, bob)):
        aid = ann.assistants.create("looker", metadata={"owner_label": "ann's"})["assistant_id"]
        for attempt in (
            lambda: bob.assistants.get(aid),
            lambda: bob.assistants.update(aid, name="taken"),
            lambda: bob.assistants.delete(aid),
            lambda: bob.assistants.get_versions(aid),
            lambda: bob.runs.wait(bob.threads.create()["thread_id"], aid, input={}),
        ):
            with pytest.raises(httpx.HTTPStatusError) as unknown:
                attempt()
            assert unknown.value.response.status_code == 404
        assert bob.assistants.search(metadata={"owner_label": "ann's"}) == []
        assert [a["assistant_id"] for a in ann.assistants.search(metadata={"owner_label": "ann's"})] == [aid]
        # the start-up assistant is everyone's to read and run, an admin's to change
        assert bob.assistants.get("looker")["metadata"] == {"created_by": "system"}
        with pytest.raises(httpx.HTTPStatusError) as refused:
            bob.assistants.update("looker", name="bob's")
        assert refused.value.response.status_code == 403


def test_the_page_s_api_neither_lists_nor_runs_sophos_s_agent_on_a_graph_s_thread(tmp_path: Path) -> None:
    # `agent` here is a hosted graph replacing Sophos's on the LangGraph API; /api keeps Sophos's own
    with serving(tmp_path, graphs=("looker", "agent")) as (client, _):
        api = client.main_url  # type: ignore[attr-defined]
        graph_threads = [seen(client, graph)["thread"] for graph in ("looker", "agent")]
        own = httpx.post(f"{api}/api/chat", json={"message": "hello"}, timeout=30).json()["conversation"]
        listed = [c["id"] for c in httpx.get(f"{api}/api/conversations").json()["conversations"]]
        assert listed == [own]
        paged = httpx.get(f"{api}/api/conversations", params={"limit": 10}).json()["conversations"]
        assert [c["id"] for c in paged] == [own]
        for tid in graph_threads:  # nor by the CLI's short ids
            assert httpx.get(f"{api}/api/conversations", params={"idPrefix": tid[:8]}).json()["conversations"] == []
        for tid in graph_threads:
            for answer in (
                httpx.post(f"{api}/api/chat", json={"conversation": tid, "message": "hi"}),
                httpx.post(f"{api}/api/chat", json={"conversation": tid, "resume": True}),
                httpx.get(f"{api}/api/conversations/{tid}"),
            ):
                assert answer.status_code == 409, answer.text
                assert answer.json()["error"]["code"] == "GRAPH_THREAD"
            assert client.runs.list(tid)[0]["status"] == "success"  # nothing ran on it since
            assert len(client.runs.list(tid)) == 1
        assert httpx.get(f"{api}/api/conversations/{own}").status_code == 200
