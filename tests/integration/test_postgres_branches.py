"""Edit, regenerate and branch switching on PostgreSQL (a real server), through the HTTP app."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from entrypoints.container import create_container
from entrypoints.http.app import create_app
from tests.integration.test_branches import Answers
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama


def settled(client: TestClient, cid: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        detail: dict[str, Any] = client.get(f"/api/conversations/{cid}").json()
        if detail["conversation"]["status"] not in (None, "running") and "activeRun" not in detail:
            return detail
        time.sleep(0.05)
    raise AssertionError(f"{cid} kept running")


def post(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/api/chat", json=body)
    assert r.status_code == 200, r.text
    return settled(client, r.json()["conversation"])


def texts(detail: dict[str, Any]) -> list[str]:
    return [m["content"] for m in detail["messages"]]


def found(client: TestClient, query: str) -> set[int]:
    r = client.get("/api/search", params={"q": query})
    assert r.status_code == 200, r.text
    return {hit["messageIndex"] for hit in r.json()["results"]}


def test_edit_regenerate_and_switch_on_postgresql(tmp_path: Path, pg_url: str, ollama: FakeOllama) -> None:
    ollama.latency = 0
    ollama.responder = Answers()
    env = app_env(tmp_path, ollama.url, TOOLS_BACKEND="none", DATABASE_URL=pg_url)
    with TestClient(create_app(create_container(env))) as client:
        cid = post(client, {"message": "pg one"})["conversation"]["id"]
        original = post(client, {"conversation": cid, "message": "pg two"})
        edited = post(client, {"conversation": cid, "message": "pg two, edited", "editOf": 2})
        assert texts(edited)[2:] == ["pg two, edited", "answer 3 to pg two, edited"]
        again = post(client, {"conversation": cid, "regenerate": True})
        assert texts(again)[3] == "answer 4 to pg two, edited" and again["activeBranch"] == 3
        assert again["messages"][2]["branch"] == {"index": 2, "count": 2, "branches": [1, 2]}
        assert again["messages"][3]["branch"] == {"index": 2, "count": 2, "branches": [2, 3]}

        assert found(client, "edited") == {2, 3}  # the search index holds the active branch
        back = client.patch(f"/api/conversations/{cid}", json={"activeBranch": 1})
        assert back.status_code == 200 and texts(back.json()) == texts(original)
        assert found(client, "edited") == set() and found(client, "answer") == {1, 3}
        listed = {c["id"]: c for c in client.get("/api/conversations").json()["conversations"]}
        assert listed[cid]["messageCount"] == 4
        bad = client.post("/api/chat", json={"conversation": cid, "message": "x", "editOf": 3})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "INVALID_EDIT"
        assert (
            texts(client.patch(f"/api/conversations/{cid}", json={"activeBranch": 2}).json())[3] == "answer 3 to pg two, edited"
        )

        lines = [json.loads(x) for x in client.get(f"/api/conversations/{cid}/export?format=jsonl").text.splitlines()]
        assert {line["branch"] for line in lines} == {1, 2, 3}
        assert "pg two, edited" in client.get(f"/api/conversations/{cid}/export").text
        assert client.delete(f"/api/conversations/{cid}").status_code == 204
