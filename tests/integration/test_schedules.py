"""Schedules through /api on a real SQLite file (issue 46): made, listed, edited, paused,
resumed and deleted per user (another user's answers 404); hostile bodies refused with
400; a six-field schedule fires in the running server, each firing's run carrying its
scheduled time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from domain.principals import Role
from entrypoints.container import create_container
from entrypoints.http.app import create_app
from entrypoints.lgapi.app import create_lgapi_app
from tests.integration.test_ownership import bearer
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama

DAILY = {"cron": "0 8 * * *", "tz": "Europe/Paris", "message": "Summarise my notes"}


def wait_for(check: Any, timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_a_schedule_is_made_listed_paused_resumed_edited_and_deleted(client: TestClient) -> None:
    made = client.post("/api/schedules", json=DAILY)
    assert made.status_code == 201, made.text
    s = made.json()["schedule"]
    assert (s["cron"], s["tz"], s["catchUp"], s["enabled"], s["conversationId"]) == (
        "0 8 * * *",
        "Europe/Paris",
        "once",
        True,
        None,
    )
    assert s["nextAt"].endswith(("T07:00:00.000Z", "T06:00:00.000Z"))  # 08:00 Paris
    assert [x["id"] for x in client.get("/api/schedules").json()["schedules"]] == [s["id"]]
    paused = client.patch(f"/api/schedules/{s['id']}", json={"enabled": False}).json()["schedule"]
    assert (paused["enabled"], paused["nextAt"]) == (False, None)
    resumed = client.patch(f"/api/schedules/{s['id']}", json={"enabled": True, "catchUp": "skip"}).json()["schedule"]
    assert resumed["enabled"] and resumed["nextAt"] == s["nextAt"] and resumed["catchUp"] == "skip"
    edited = client.patch(f"/api/schedules/{s['id']}", json={"cron": "30 9 * * 1", "message": "Weekly"}).json()["schedule"]
    assert (edited["cron"], edited["message"]) == ("30 9 * * 1", "Weekly")
    assert client.get(f"/api/schedules/{s['id']}").json()["schedule"] == edited
    assert client.delete(f"/api/schedules/{s['id']}").status_code == 204
    assert client.get(f"/api/schedules/{s['id']}").status_code == 404
    assert client.get("/api/schedules").json() == {"schedules": []}


@pytest.mark.parametrize(
    "body",
    [
        {"message": "no time"},
        {"cron": "* * *", "message": "x"},
        {"cron": "0 8 * * *", "at": "2030-01-01T00:00:00Z", "message": "both"},
        {"cron": "0 8 * * *", "tz": "Mars/Base", "message": "x"},
        {"cron": "0 8 * * *", "tz": "../../etc/passwd", "message": "x"},
        {"cron": "0 8 * * *", "message": ""},
        {"cron": "0 8 * * *", "message": 5},
        {"cron": 5, "message": "x"},
        {"at": "tomorrow", "message": "x"},
        {"at": "2030-01-01T00:00:00", "message": "no offset"},
        {"at": "2001-01-01T00:00:00Z", "message": "in the past"},
        {"cron": "0 8 * * *", "message": "x", "catchUp": "twice"},
        {"cron": "0 8 * * *", "message": "x", "enabled": "yes"},
        {"cron": "0 8 * * *", "message": "x", "conversationId": "nope"},
        {"cron": "0 8 * * *", "message": "x", "owner": "someone"},
        {"cron": "0 8 * * * " * 30, "message": "x"},
    ],
)
def test_a_bad_schedule_is_refused_with_400_and_nothing_is_stored(client: TestClient, body: dict[str, Any]) -> None:
    answer = client.post("/api/schedules", json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "BAD_REQUEST"
    assert client.get("/api/schedules").json() == {"schedules": []}


def test_an_unknown_or_malformed_schedule_id_answers_404(client: TestClient) -> None:
    for sid in ("00000000-0000-4000-8000-000000000000", "not-an-id"):
        assert client.get(f"/api/schedules/{sid}").status_code == 404
        assert client.patch(f"/api/schedules/{sid}", json={"enabled": False}).status_code == 404
        assert client.delete(f"/api/schedules/{sid}").status_code == 404


@pytest.fixture
def team(tmp_path: Path, ollama: FakeOllama) -> Iterator[tuple[TestClient, dict[str, dict[str, str]]]]:
    container = create_container(app_env(tmp_path, ollama.url, TOOLS_BACKEND="none"))
    with TestClient(create_app(container)) as client:
        users = container.services().users()
        keys = {}
        for name in ("ann", "bob"):
            user = client.portal.call(users.add, name, Role.USER)  # type: ignore[union-attr]
            keys[name] = bearer(client.portal.call(users.issue_token, user.id, "test").token)  # type: ignore[union-attr]
        yield client, keys


def test_another_users_schedule_answers_as_unknown(team: tuple[TestClient, dict[str, dict[str, str]]]) -> None:
    client, keys = team
    sid = client.post("/api/schedules", json=DAILY, headers=keys["ann"]).json()["schedule"]["id"]
    assert client.get("/api/schedules", headers=keys["bob"]).json() == {"schedules": []}
    for answer in (
        client.get(f"/api/schedules/{sid}", headers=keys["bob"]),
        client.patch(f"/api/schedules/{sid}", json={"enabled": False}, headers=keys["bob"]),
        client.delete(f"/api/schedules/{sid}", headers=keys["bob"]),
        client.get(f"/api/schedules/{sid}/runs", headers=keys["bob"]),
    ):
        assert answer.status_code == 404
    assert client.get(f"/api/schedules/{sid}", headers=keys["ann"]).json()["schedule"]["enabled"]
    # nor may a schedule send messages into another user's conversation
    cid = client.post("/api/chat", json={"message": "mine"}, headers=keys["ann"]).json()["conversation"]
    sneaky = client.post("/api/schedules", json={**DAILY, "conversationId": cid}, headers=keys["bob"])
    assert sneaky.status_code == 404


def test_an_every_second_schedule_fires_in_the_server_each_run_with_its_time(client: TestClient, ollama: FakeOllama) -> None:
    ollama.latency = 0.0
    cid = client.post("/api/chat", json={"message": "hello"}).json()["conversation"]
    wait_for(lambda: client.get(f"/api/conversations/{cid}").json()["conversation"]["status"] == "completed")
    s = client.post("/api/schedules", json={"cron": "* * * * * *", "message": "tick", "conversationId": cid}).json()["schedule"]

    def two_firings() -> list[dict[str, Any]] | None:
        firings = client.get(f"/api/schedules/{s['id']}/runs").json()["firings"]
        return firings if len(firings) >= 2 else None

    times = sorted(f["scheduledFor"] for f in wait_for(two_firings))
    assert len(set(times)) == 2 and all(t.endswith(".000Z") for t in times)
    assert client.patch(f"/api/schedules/{s['id']}", json={"enabled": False}).status_code == 200
    every = client.get(f"/api/schedules/{s['id']}/runs").json()["firings"]
    assert len({f["scheduledFor"] for f in every}) == len(every)  # never two runs for one time
    messages = client.get(f"/api/conversations/{cid}").json()["messages"]
    assert sum(m["content"] == "tick" for m in messages if m["role"] == "user") >= 1


def test_the_langgraph_api_shows_a_scheduled_runs_time_in_its_metadata(tmp_path: Path, ollama: FakeOllama) -> None:
    ollama.latency = 0.0
    container = create_container(app_env(tmp_path, ollama.url, TOOLS_BACKEND="none"))
    with TestClient(create_app(container)) as client:
        lg = TestClient(create_lgapi_app(container.services(), container.settings(), asyncio.Event()))
        s = client.post("/api/schedules", json={"cron": "* * * * * *", "message": "tick"}).json()["schedule"]
        firing = wait_for(lambda: client.get(f"/api/schedules/{s['id']}/runs").json()["firings"])[-1]
        client.patch(f"/api/schedules/{s['id']}", json={"enabled": False})
        listed = lg.get(f"/threads/{firing['conversationId']}/runs").json()
        [run] = [r for r in listed if r["run_id"] == firing["runId"]]
        assert run["metadata"]["trigger"] == "schedule" and run["metadata"]["scheduled_for"] == firing["scheduledFor"]
        one = lg.get(f"/threads/{firing['conversationId']}/runs/{firing['runId']}").json()
        assert one["metadata"]["scheduled_for"] == firing["scheduledFor"]
        user_run = client.post("/api/chat", json={"message": "hi"}).json()
        plain = lg.get(f"/threads/{user_run['conversation']}/runs/{user_run['run']}").json()
        assert "scheduled_for" not in plain["metadata"]
