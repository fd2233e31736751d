"""Organising many chats through /api on a real SQLite file (issue 48 item 13): pins, the
archive, temporary chats (never listed, never searched, deleted once left) and turn counts."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.integration.test_model_choice import events, turn
from tests.integration.test_titles import until
from tests.support.fake_ollama import FakeOllama


def ids(client: TestClient, query: str = "") -> list[str]:
    response = client.get(f"/api/conversations{query}")
    assert response.status_code == 200, response.text
    return [c["id"] for c in response.json()["conversations"]]


@pytest.fixture
def quick(ollama: FakeOllama) -> FakeOllama:
    ollama.latency = 0.0
    return ollama


def test_pins_and_the_archive_choose_the_lists_and_never_reorder_them(client: TestClient, quick: FakeOllama) -> None:
    old, _ = turn(client, {"message": "old"})
    pinned, _ = turn(client, {"message": "pinned"})
    archived, _ = turn(client, {"message": "archived"})
    before = {c["id"]: c["updatedAt"] for c in client.get("/api/conversations").json()["conversations"]}
    answer = client.patch(f"/api/conversations/{pinned}", json={"pinned": True}).json()["conversation"]
    assert answer["pinned"] is True and answer["archived"] is False and answer["updatedAt"] == before[pinned]
    client.patch(f"/api/conversations/{archived}", json={"archived": True})
    assert ids(client) == [pinned, old]  # the main list: not archived
    assert ids(client, "?pinned=true") == [pinned] and ids(client, "?pinned=false") == [old]
    assert ids(client, "?archived=true") == [archived]
    assert ids(client, "?archived=true&limit=10") == [archived]
    summaries = client.get("/api/conversations?fields=all").json()["conversations"]
    assert [(c["pinned"], c["archived"]) for c in summaries] == [(True, False), (False, False)]
    plain = client.get("/api/conversations").json()["conversations"]
    assert plain[0]["pinned"] is True and "pinned" not in plain[1] and "turns" not in plain[1]  # the contract's shape
    assert {c["id"]: c["updatedAt"] for c in summaries} == {k: v for k, v in before.items() if k != archived}
    # an archived conversation is still itself: opened, continued, searched
    assert client.get(f"/api/conversations/{archived}").json()["conversation"]["archived"] is True
    assert {r["conversation"] for r in client.get("/api/search?q=archived").json()["results"]} == {archived}
    client.patch(f"/api/conversations/{archived}", json={"archived": False, "pinned": True})
    assert ids(client, "?pinned=true") == [archived, pinned]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("?archived=yes", "archived must be true or false"),
        ("?pinned=1", "pinned must be true or false"),
        ("?fields=some", "fields must be all"),
    ],
)
def test_bad_list_parameters_are_refused(client: TestClient, query: str, message: str) -> None:
    response = client.get(f"/api/conversations{query}")
    assert response.status_code == 400 and message in response.json()["error"]["message"]


def test_a_bad_pin_or_archive_is_refused_and_changes_nothing(client: TestClient, quick: FakeOllama) -> None:
    cid, _ = turn(client, {"message": "hi"})
    for body in ({"pinned": "yes"}, {"archived": 1}, {"pinned": None}):
        refused = client.patch(f"/api/conversations/{cid}", json=body)
        assert refused.status_code == 400 and "must be true or false" in refused.json()["error"]["message"], body
    assert ids(client, "?pinned=true") == []


def test_a_temporary_chat_is_never_listed_searched_or_exported(client: TestClient, quick: FakeOllama) -> None:
    kept, _ = turn(client, {"message": "zanzibar kept"})
    temporary, _ = turn(client, {"message": "zanzibar secret", "temporary": True})
    detail = client.get(f"/api/conversations/{temporary}").json()
    assert detail["conversation"]["temporary"] is True and len(detail["messages"]) == 2
    assert temporary not in ids(client) + ids(client, "?archived=true") + ids(client, "?limit=50")
    assert ids(client, f"?idPrefix={temporary[:8]}") == []
    assert {r["conversation"] for r in client.get("/api/search?q=zanzibar").json()["results"]} == {kept}
    with zipfile.ZipFile(io.BytesIO(client.get("/api/export").content)) as z:
        assert len(z.namelist()) == 1 and "secret" not in z.read(z.namelist()[0]).decode()
    # it goes on as any conversation while its page has it
    turn(client, {"message": "and more", "conversation": temporary})
    refused = client.patch(f"/api/conversations/{temporary}", json={"pinned": True})
    assert refused.status_code == 400 and "temporary" in refused.json()["error"]["message"]
    assert client.delete(f"/api/conversations/{temporary}").status_code == 204
    assert client.get(f"/api/conversations/{temporary}").status_code == 404


def test_a_temporary_chat_left_while_it_answers_is_deleted_when_the_answer_ends(client: TestClient, ollama: FakeOllama) -> None:
    ollama.add({"text": "a slow answer " * 5, "token_delay": 0.05})
    started = client.post("/api/chat", json={"message": "hi", "temporary": True}).json()
    cid = started["conversation"]
    left = client.delete(f"/api/conversations/{cid}")  # the page leaves it mid-answer
    assert left.status_code == 202
    assert events(client, cid)[-1][0] in ("end", "chat-error")
    until(lambda: client.get(f"/api/conversations/{cid}").status_code == 404)
    # a kept conversation is still refused while it runs, as before
    ollama.add({"text": "slow " * 10, "token_delay": 0.05})
    kept = client.post("/api/chat", json={"message": "hi"}).json()["conversation"]
    assert client.delete(f"/api/conversations/{kept}").json()["error"]["code"] == "SESSION_IN_PROGRESS"
    events(client, kept)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"message": "hi", "temporary": "yes"}, "temporary must be true or false"),
        (
            {"message": "hi", "temporary": True, "conversation": "00000000-0000-4000-8000-000000000000"},
            "temporary applies to a new conversation",
        ),
    ],
)
def test_a_bad_temporary_flag_is_refused(client: TestClient, body: dict[str, Any], message: str) -> None:
    response = client.post("/api/chat", json=body)
    assert response.status_code == 400 and message in response.json()["error"]["message"]


def test_the_list_counts_turns_not_messages(client: TestClient, quick: FakeOllama) -> None:
    quick.add({"tool_calls": [("nope", {})]}, {"text": "done"}, {"text": "second"})
    cid, _ = turn(client, {"message": "first"})
    turn(client, {"message": "second", "conversation": cid})
    summary = until(
        lambda: next(
            (
                c
                for c in client.get("/api/conversations?fields=all").json()["conversations"]
                if c["id"] == cid and c["turns"] == 2
            ),
            None,
        )
    )
    assert summary["messageCount"] == 6  # user, a call, its result, the answer; user, answer
    assert client.get(f"/api/conversations/{cid}").json()["conversation"]["turns"] == 2
