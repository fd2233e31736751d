"""LangGraph's cron API (`client.crons`) against a real `sophos serve` hosting a graph of a
langgraph.json (issues 44, 46): a cron fires a run of the hosted graph with the cron's own
input on a six-field (seconds) schedule, its run carrying `metadata.scheduled_for`; crons
are searched, counted, updated and deleted with langgraph-api's shapes, each its owner's
only; hostile requests get a clear 4xx."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.integration.test_langgraph_api import wait_up
from tests.integration.test_users_server import add_user
from tests.support.app import app_env
from tests.support.server import LiveServer, free_port

HOOK = "http://127.0.0.1:9"  # allowed by the servers below (WEBHOOK_ALLOWED_HOSTS); nothing listens: stored, not called

GRAPH = """
from typing_extensions import TypedDict
from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    value: str


def shout(state):
    return {"value": state["value"] + "!"}


builder = StateGraph(State)
builder.add_node("shout", shout)
builder.add_edge(START, "shout")
builder.add_edge("shout", END)
shouter = builder.compile()
"""


class Served:
    def __init__(self, url: str, tokens: dict[str, str]) -> None:
        self.url, self.tokens = url, tokens

    def client(self, name: str) -> SyncLangGraphClient:
        return get_sync_client(url=self.url, api_key=self.tokens[name])

    def raw(self, name: str, method: str, path: str, body: object = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[name]}"}
        return httpx.request(method, self.url + path, json=body, headers=headers, timeout=10)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp_path = tmp_path_factory.mktemp("crons")
    (tmp_path / "graphs").mkdir()
    (tmp_path / "graphs" / "shouter.py").write_text(GRAPH)
    (tmp_path / "langgraph.json").write_text(json.dumps({"graphs": {"shouter": "./graphs/shouter.py:shouter"}}))
    lg_port = free_port()
    settings = app_env(
        tmp_path,
        MODEL_BACKEND="demo",
        TOOLS_BACKEND="none",
        LANGGRAPH_API_PORT=str(lg_port),
        LANGGRAPH_JSON=str(tmp_path / "langgraph.json"),
        WEBHOOK_ALLOWED_HOSTS="127.0.0.1",
    )
    tokens = {name: add_user(settings, name)[1] for name in ("ann", "bob")}
    server = LiveServer(settings, tmp_path).start()
    try:
        url = f"http://127.0.0.1:{lg_port}"
        wait_up(f"{url}/ok")
        yield Served(url, tokens)
    finally:
        server.stop()


def runs_of(client: SyncLangGraphClient, thread_id: str, count: int, timeout: float = 20.0) -> list[dict[str, Any]]:
    """The thread's runs once `count` of them have ended (polled, with a deadline)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [dict(r) for r in client.runs.list(thread_id)]
        if len([r for r in found if r["status"] == "success"]) >= count:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{count} runs did not end on {thread_id}")


def test_a_cron_fires_its_hosted_graph_with_its_input_and_each_run_has_its_scheduled_time(served: Served) -> None:
    ann = served.client("ann")
    thread = ann.threads.create()["thread_id"]
    cron = ann.crons.create_for_thread(thread, "shouter", schedule="* * * * * *", input={"value": "tick"})
    try:
        assert cron["thread_id"] == thread and cron["schedule"] == "* * * * * *" and cron["enabled"] is True
        assert cron["payload"]["input"] == {"value": "tick"} and cron["next_run_date"] is not None
        found = runs_of(ann, thread, 2)
    finally:
        ann.crons.delete(cron["cron_id"])
    times = [datetime.fromisoformat(r["metadata"]["scheduled_for"]) for r in found if r["status"] == "success"]
    assert all(t.microsecond == 0 for t in times) and len(set(times)) == len(times)  # one run per firing, on the second
    assert ann.threads.get_state(thread)["values"] == {"value": "tick!"}  # the cron's own input, each firing afresh
    assert ann.crons.count(thread_id=thread) == 0


def test_info_says_crons_are_served(served: Served) -> None:
    assert served.raw("ann", "GET", "/info").json()["flags"]["crons"] is True


def test_crons_are_searched_counted_updated_and_deleted_with_langgraph_apis_shapes(served: Served) -> None:
    ann = served.client("ann")
    made = ann.crons.create(
        "shouter", schedule="0 8 * * *", input={"value": "a"}, metadata={"label": "daily"}, timezone="Europe/Paris"
    )
    other = ann.crons.create("shouter", schedule="0 9 * * *", input={"value": "b"}, on_run_completed="keep", enabled=False)
    try:
        assert made["on_run_completed"] == "delete" and made["thread_id"] is None and made["timezone"] == "Europe/Paris"
        assert datetime.fromisoformat(made["next_run_date"]).astimezone(ZoneInfo("Europe/Paris")).hour == 8
        assert [c["cron_id"] for c in ann.crons.search(metadata={"label": "daily"})] == [made["cron_id"]]
        assert [c["cron_id"] for c in ann.crons.search(enabled=False)] == [other["cron_id"]]
        assert ann.crons.count(assistant_id="shouter") == 2
        listed = ann.crons.search(sort_by="cron_id", sort_order="asc", select=["cron_id", "enabled"])
        assert listed == sorted(({"cron_id": c["cron_id"], "enabled": c["enabled"]} for c in (made, other)), key=str)
        updated = ann.crons.update(made["cron_id"], schedule="30 8 * * *", input={"value": "c"}, enabled=False)
        assert updated["schedule"] == "30 8 * * *" and updated["payload"]["input"] == {"value": "c"}
        assert updated["enabled"] is False and updated["next_run_date"] is None and updated["metadata"] == {"label": "daily"}
        ended = ann.crons.update(other["cron_id"], end_time=datetime(2099, 1, 1), webhook=HOOK + "/done")
        assert ended["end_time"].startswith("2099-01-01") and ended["payload"]["webhook"] == HOOK + "/done"
        assert ann.crons.update(other["cron_id"], end_time=None)["end_time"] is None
    finally:
        ann.crons.delete(made["cron_id"])
        ann.crons.delete(other["cron_id"])
    assert ann.crons.count() == 0


def test_a_cron_is_its_owners_only(served: Served) -> None:
    ann = served.client("ann")
    cron = ann.crons.create("shouter", schedule="0 8 * * *", input={"value": "a"})
    try:
        path = f"/runs/crons/{cron['cron_id']}"
        assert served.raw("bob", "GET", path).status_code == 404
        assert served.raw("bob", "PATCH", path, {"enabled": False}).status_code == 404
        assert served.raw("bob", "DELETE", path).status_code == 404
        assert served.raw("bob", "POST", "/runs/crons/search", {}).json() == []
        assert served.raw("bob", "POST", "/runs/crons/count", {}).json() == 0
        bobs_thread = served.client("bob").threads.create()["thread_id"]
        made = served.raw(
            "ann", "POST", f"/threads/{bobs_thread}/runs/crons", {"assistant_id": "shouter", "schedule": "0 8 * * *"}
        )
        assert made.status_code == 404
        assert served.raw("ann", "GET", path).json()["enabled"] is True
    finally:
        ann.crons.delete(cron["cron_id"])


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"assistant_id": "shouter", "schedule": "every day"}, 400),
        ({"assistant_id": "shouter", "schedule": "0 8 * * *", "timezone": "Mars/Olympus"}, 400),
        ({"assistant_id": "nobody", "schedule": "0 8 * * *"}, 404),
        ({"assistant_id": "shouter"}, 422),
        ({"assistant_id": "shouter", "schedule": "0 8 * * *", "webhook": "file:///etc/passwd"}, 400),
        ({"assistant_id": "shouter", "schedule": "0 8 * * *", "on_run_completed": "shred"}, 400),
        ({"assistant_id": "shouter", "schedule": "0 8 * * *", "stream_mode": "telepathy"}, 400),
        ({"assistant_id": "shouter", "schedule": "0 8 * * *", "end_time": "yesterday"}, 422),
        ({"assistant_id": "shouter", "schedule": "0 8 * * *", "end_time": "2001-01-01T00:00:00"}, 400),
        ({"assistant_id": "shouter", "schedule": "0 8 * * *", "unknown": 1}, 400),
    ],
)
def test_a_hostile_cron_gets_a_clear_error(served: Served, body: dict[str, Any], status: int) -> None:
    answer = served.raw("ann", "POST", "/runs/crons", body)
    assert answer.status_code == status, answer.text
    assert served.raw("ann", "POST", "/runs/crons/count", {}).json() == 0


def test_an_unknown_cron_or_a_bad_search_gets_a_clear_error(served: Served) -> None:
    assert served.raw("ann", "GET", "/runs/crons/not-an-id").status_code == 404
    assert served.raw("ann", "DELETE", "/runs/crons/00000000-0000-0000-0000-000000000000").status_code == 404
    assert served.raw("ann", "POST", "/runs/crons/search", {"select": ["password"]}).status_code == 422
    assert served.raw("ann", "POST", "/runs/crons/search", {"sort_by": "owner"}).status_code == 400
    assert served.raw("ann", "POST", "/runs/crons/search", {"limit": 0}).status_code == 400


@pytest.mark.parametrize("backend", ["memory", "postgres"])
def test_a_cron_fires_its_hosted_graph_on_the_other_backends(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    storage = {"STORAGE_BACKEND": "memory"} if backend == "memory" else {"DATABASE_URL": request.getfixturevalue("pg_url")}
    (tmp_path / "graphs").mkdir()
    (tmp_path / "graphs" / "shouter.py").write_text(GRAPH)
    (tmp_path / "langgraph.json").write_text(json.dumps({"graphs": {"shouter": "./graphs/shouter.py:shouter"}}))
    lg_port = free_port()
    env = {
        "LANGGRAPH_API_PORT": str(lg_port),
        "LANGGRAPH_JSON": str(tmp_path / "langgraph.json"),
        "WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
        **storage,
    }
    server = LiveServer(app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none", **env), tmp_path).start()
    try:
        wait_up(f"http://127.0.0.1:{lg_port}/ok")
        client = get_sync_client(url=f"http://127.0.0.1:{lg_port}")
        thread = client.threads.create()["thread_id"]
        cron = client.crons.create_for_thread(
            thread, "shouter", schedule="* * * * * *", input={"value": "tock"}, webhook=HOOK + "/hook"
        )
        assert client.crons.search(thread_id=thread)[0]["payload"]["webhook"] == HOOK + "/hook"
        found = runs_of(client, thread, 1)
        client.crons.delete(cron["cron_id"])
        assert all(r["metadata"].get("scheduled_for") for r in found)
        assert client.threads.get_state(thread)["values"] == {"value": "tock!"}
    finally:
        server.stop()
