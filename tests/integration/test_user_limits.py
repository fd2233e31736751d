"""USER_MAX_ACTIVE_RUNS: a user's running runs plus queued messages are capped, 429
USER_LIMIT beyond; other users and the bootstrap admin are not held back by it."""

from __future__ import annotations

from typing import Any

from domain.principals import Role
from tests.support.fake_ollama import FakeOllama


def test_a_user_past_the_limit_gets_429_and_others_do_not(make_client: Any, ollama: FakeOllama) -> None:
    client = make_client(USER_MAX_ACTIVE_RUNS=1, API_TOKEN="admin-token")
    users = client.app.state.services.users()
    tokens = {}
    for name in ("ann", "bob"):
        user = client.portal.call(users.add, name, Role.USER)
        tokens[name] = {"Authorization": f"Bearer {client.portal.call(users.issue_token, user.id, '').token}"}
    ollama.add({"stall": 20}, {"stall": 20}, {"stall": 20})
    first = client.post("/api/chat", json={"message": "one"}, headers=tokens["bob"])
    assert first.status_code == 200, first.text
    second = client.post("/api/chat", json={"message": "two"}, headers=tokens["bob"])
    assert second.status_code == 429 and second.json()["error"]["code"] == "USER_LIMIT", second.text
    queued = client.post("/api/chat", json={"message": "later", "conversation": first.json()["conversation"],
                                           "multitask": "enqueue"}, headers=tokens["bob"])
    assert queued.status_code == 429 and queued.json()["error"]["code"] == "USER_LIMIT", queued.text
    assert client.post("/api/chat", json={"message": "mine"}, headers=tokens["ann"]).status_code == 200
    admin = {"Authorization": "Bearer admin-token"}
    assert client.post("/api/chat", json={"message": "ops"}, headers=admin).status_code == 200
    cid = first.json()["conversation"]
    assert client.post("/api/chat/cancel", json={"conversation": cid}, headers=tokens["bob"]).status_code == 200
    again = client.post("/api/chat", json={"message": "three"}, headers=tokens["bob"])
    assert again.status_code == 200, again.text
