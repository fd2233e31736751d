"""Titles the model writes after the first answer (issue 48 item 13), against the fake
Ollama, so the titling request is seen as the model server gets it: through /api on a real
SQLite file, and for a thread of the LangGraph API on a real `sophos serve`."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from domain.organise import TITLE_SYSTEM
from tests.integration.test_langgraph_api import human, sophos
from tests.integration.test_model_choice import events, turn
from tests.support.fake_ollama import FakeOllama

TITLE = '"Lighthouse keepers."'


def until(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    """`check()` once it is truthy (a title comes after the run, off its critical path)."""
    deadline = time.monotonic() + timeout
    while not (got := check()):
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.05)
    return got


def titling(body: dict[str, Any]) -> bool:
    return bool(body.get("messages")) and body["messages"][0].get("content") == TITLE_SYSTEM


def answers(title: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def reply(body: dict[str, Any]) -> dict[str, Any]:
        return title if titling(body) else {"text": "Lighthouses guide ships at night."}

    return reply


def listed(client: TestClient, cid: str) -> dict[str, Any]:
    every = client.get("/api/conversations?fields=all").json()["conversations"]
    return next(c for c in every if c["id"] == cid)


def test_the_model_titles_a_conversation_after_its_first_answer(make_client: Any, ollama: FakeOllama) -> None:
    ollama.latency, ollama.responder = 0.0, answers({"text": TITLE})
    client = make_client(AUTO_TITLE="true")
    assert client.get("/api/models").json()["autoTitle"] is True
    cid, _ = turn(client, {"message": "tell me about lighthouses"})
    answered = listed(client, cid)
    assert answered["title"] in ("tell me about lighthouses", "Lighthouse keepers")  # the run ended first
    summary = until(lambda: (c := listed(client, cid))["titleBy"] == "model" and c)
    assert summary["title"] == "Lighthouse keepers" and summary["updatedAt"] == answered["updatedAt"]
    asked = [r for r in ollama.requests if titling(r)]
    assert len(asked) == 1
    assert asked[0]["model"] == "qwen3" and not asked[0].get("tools")
    assert asked[0]["messages"][1] == {
        "role": "user",
        "content": "User: tell me about lighthouses\n\nAssistant: Lighthouses guide ships at night.\n\nTitle:",
    }
    # the next answers ask for no title; the search finds the model's title
    turn(client, {"message": "and at sea?", "conversation": cid})
    assert until(lambda: listed(client, cid)["turns"] == 2)
    assert len([r for r in ollama.requests if titling(r)]) == 1
    found = client.get("/api/search?q=keepers").json()["results"]
    assert [(r["conversation"], r["role"]) for r in found] == [(cid, "title")]


def test_a_title_the_user_set_is_never_replaced(make_client: Any, ollama: FakeOllama) -> None:
    ollama.responder = answers({"text": TITLE})  # the run takes 0.3 s (latency): renamed meanwhile
    client = make_client(AUTO_TITLE="true")
    started = client.post("/api/chat", json={"message": "tell me about lighthouses"}).json()
    assert client.patch(f"/api/conversations/{started['conversation']}", json={"title": "Mine"}).status_code == 200
    assert events(client, started["conversation"])[-1][0] == "end"
    turn(client, {"message": "more", "conversation": started["conversation"]})
    assert until(lambda: listed(client, started["conversation"])["turns"] == 2)
    summary = listed(client, started["conversation"])
    assert (summary["title"], summary["titleBy"]) == ("Mine", "user")
    assert not [r for r in ollama.requests if titling(r)]


def test_a_titling_request_that_fails_never_fails_the_run(make_client: Any, ollama: FakeOllama) -> None:
    ollama.latency, ollama.responder = 0.0, answers({"error": "the model broke"})
    client = make_client(AUTO_TITLE="true")
    cid, seen = turn(client, {"message": "tell me about lighthouses"})  # `end`, completed
    until(lambda: [r for r in ollama.requests if titling(r)])
    assert until(lambda: listed(client, cid)["turns"] == 1)
    summary = listed(client, cid)
    assert (summary["title"], summary["titleBy"], summary["status"]) == ("tell me about lighthouses", "message", "completed")


def test_auto_title_false_asks_for_no_title(make_client: Any, ollama: FakeOllama) -> None:
    ollama.latency, ollama.responder = 0.0, answers({"text": TITLE})
    client = make_client()  # the tests' AUTO_TITLE=false
    assert client.get("/api/models").json()["autoTitle"] is False
    cid, _ = turn(client, {"message": "tell me about lighthouses"})
    assert until(lambda: listed(client, cid)["turns"] == 1)
    assert listed(client, cid)["title"] == "tell me about lighthouses"
    assert not [r for r in ollama.requests if titling(r)]


def test_a_langgraph_thread_gets_the_models_title_in_its_metadata(tmp_path: Path) -> None:
    with sophos(tmp_path, AUTO_TITLE="true", TOOL_APPROVAL="off") as s:
        s.fake.responder = answers({"text": "Lighthouse keepers"})
        client = s.client()
        tid = client.threads.create()["thread_id"]
        assert client.threads.get(tid)["metadata"]["title"] == "New Conversation"
        client.runs.wait(tid, "agent", input=human("tell me about lighthouses"))
        until(lambda: client.threads.get(tid)["metadata"]["title"] == "Lighthouse keepers")
        assert s.server.get(f"/api/conversations/{tid}").json()["conversation"]["titleBy"] == "model"
        found = client.threads.search(metadata={"title": "Lighthouse keepers"})
        assert [t["thread_id"] for t in found] == [tid]
