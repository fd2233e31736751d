"""Saved chat settings through /api on a real SQLite file (issue 48 item 12): each user's
default for new conversations (what the model server then receives), named presets, their
limits, and users kept apart."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from domain.presets import PRESETS_MAX
from domain.principals import Role
from entrypoints.container import create_container
from entrypoints.http.app import create_app
from entrypoints.lgapi.app import create_lgapi_app
from tests.integration.test_model_choice import SYSTEM_FILE, system_of, turn
from tests.integration.test_ownership import bearer
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama


@pytest.fixture
def models(ollama: FakeOllama) -> FakeOllama:
    ollama.latency = 0.0
    ollama.models = ("qwen3:latest", "llama3.2:latest")
    return ollama


def test_a_users_default_is_what_their_new_conversations_start_with(client: TestClient, models: FakeOllama) -> None:
    assert client.get("/api/presets").json() == {"defaults": None, "presets": []}
    saved = client.put("/api/presets/defaults", json={"model": "llama3.2", "system": "Be brief.", "systemMode": "replace"})
    assert saved.status_code == 200, saved.text
    assert saved.json()["defaults"] | {"updatedAt": None} == {
        "model": "llama3.2",
        "system": "Be brief.",
        "systemMode": "replace",
        "updatedAt": None,
    }
    cid, _ = turn(client, {"message": "hi"})
    assert (models.requests[-1]["model"], system_of(models.requests[-1])) == ("llama3.2", "Be brief.")
    conversation = client.get(f"/api/conversations/{cid}").json()["conversation"]
    assert (conversation["model"], conversation["system"], conversation["systemMode"]) == ("llama3.2", "Be brief.", "replace")
    # a first message that names a field takes it; the others still come from the default
    turn(client, {"message": "hi", "model": None, "systemMode": "add"})
    assert (models.requests[-1]["model"], system_of(models.requests[-1])) == ("qwen3", f"{SYSTEM_FILE}\n\nBe brief.")
    # a conversation keeps what it started with when the default changes; new ones do not get it
    assert client.delete("/api/presets/defaults").status_code == 204
    turn(client, {"message": "again", "conversation": cid})
    assert models.requests[-1]["model"] == "llama3.2"
    turn(client, {"message": "fresh"})
    assert (models.requests[-1]["model"], system_of(models.requests[-1])) == ("qwen3", SYSTEM_FILE)


def test_named_presets_are_saved_replaced_listed_and_deleted(client: TestClient, models: FakeOllama) -> None:
    for name, model in (("Writer", "llama3.2"), ("Coder", None), ("Writer", "qwen3")):
        answer = client.put(f"/api/presets/named/{name}", json={"model": model, "system": f"You are a {name}."})
        assert answer.status_code == 200, answer.text
    listed = client.get("/api/presets").json()["presets"]
    assert [(p["name"], p["model"], p["system"], p["systemMode"]) for p in listed] == [
        ("Coder", None, "You are a Coder.", "add"),
        ("Writer", "qwen3", "You are a Writer.", "add"),
    ]
    assert client.delete("/api/presets/named/Coder").status_code == 204
    gone = client.delete("/api/presets/named/Coder")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "NOT_FOUND"
    assert [p["name"] for p in client.get("/api/presets").json()["presets"]] == ["Writer"]


@pytest.mark.parametrize(
    ("path", "body", "code", "message"),
    [
        ("/api/presets/named/x", {"model": "mistral"}, "UNKNOWN_MODEL", "mistral"),
        ("/api/presets/named/x", {"colour": "red"}, "BAD_REQUEST", "Unknown field(s): colour"),
        ("/api/presets/named/x", {"systemMode": "instead"}, "BAD_REQUEST", "systemMode"),
        ("/api/presets/named/x", {"system": "s" * 16_001}, "BAD_REQUEST", "system is longer"),
        ("/api/presets/named/" + "n" * 61, {}, "BAD_REQUEST", "at most 60 characters"),
        ("/api/presets/named/%20", {}, "BAD_REQUEST", "must not be empty"),
        ("/api/presets/named/a%1bb", {}, "BAD_REQUEST", "control characters"),
        ("/api/presets/defaults", {"model": 7}, "BAD_REQUEST", "model must be a string"),
    ],
)
def test_a_bad_preset_is_refused_and_nothing_is_stored(
    client: TestClient, models: FakeOllama, path: str, body: dict[str, Any], code: str, message: str
) -> None:
    refused = client.put(path, json=body)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == code and message in refused.json()["error"]["message"]
    assert client.get("/api/presets").json() == {"defaults": None, "presets": []}


def test_a_new_preset_past_the_limit_is_refused_but_one_saved_again_is_not(client: TestClient, models: FakeOllama) -> None:
    for i in range(PRESETS_MAX):
        assert client.put(f"/api/presets/named/p{i:02}", json={}).status_code == 200
    refused = client.put("/api/presets/named/one-more", json={})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "PRESET_LIMIT"
    assert client.put("/api/presets/named/p07", json={"system": "again"}).status_code == 200
    assert client.put("/api/presets/defaults", json={"system": "mine"}).status_code == 200
    assert len(client.get("/api/presets").json()["presets"]) == PRESETS_MAX


@pytest.fixture
def team(tmp_path: Path, models: FakeOllama) -> Iterator[tuple[TestClient, dict[str, dict[str, str]], Any]]:
    container = create_container(app_env(tmp_path, models.url, TOOLS_BACKEND="none"))
    with TestClient(create_app(container)) as client:
        users = container.services().users()
        keys = {}
        for name in ("ann", "bob"):
            user = client.portal.call(users.add, name, Role.USER)  # type: ignore[union-attr]
            keys[name] = bearer(client.portal.call(users.issue_token, user.id, "test").token)  # type: ignore[union-attr]
        yield client, keys, container


def test_each_user_has_their_own_default_and_presets(team: tuple[TestClient, dict[str, dict[str, str]], Any]) -> None:
    client, keys, container = team
    client.put("/api/presets/defaults", json={"model": "llama3.2"}, headers=keys["ann"])
    client.put("/api/presets/named/Writer", json={"system": "Ann's."}, headers=keys["ann"])
    assert client.get("/api/presets", headers=keys["bob"]).json() == {"defaults": None, "presets": []}
    assert client.delete("/api/presets/named/Writer", headers=keys["bob"]).status_code == 404
    mine = turn_as(client, keys["ann"])
    theirs = turn_as(client, keys["bob"])
    assert client.get(f"/api/conversations/{mine}", headers=keys["ann"]).json()["conversation"]["model"] == "llama3.2"
    assert client.get(f"/api/conversations/{theirs}", headers=keys["bob"]).json()["conversation"]["model"] is None
    assert [p["name"] for p in client.get("/api/presets", headers=keys["ann"]).json()["presets"]] == ["Writer"]
    # a thread the LangGraph API makes for Ann starts with her default too
    lg = TestClient(create_lgapi_app(container.services(), container.settings(), asyncio.Event()))
    thread = lg.post("/threads", json={}, headers={"X-Api-Key": keys["ann"]["Authorization"][7:]}).json()["thread_id"]
    assert client.get(f"/api/conversations/{thread}", headers=keys["ann"]).json()["conversation"]["model"] == "llama3.2"


def turn_as(client: TestClient, headers: dict[str, str]) -> str:
    response = client.post("/api/chat", json={"message": "hi"}, headers=headers)
    assert response.status_code == 200, response.text
    return str(response.json()["conversation"])
