"""USER_MAX_ACTIVE_RUNS: a user's running runs plus queued messages are capped, 429
USER_LIMIT beyond; other users and the bootstrap admin are not held back by it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
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
    queued = client.post(
        "/api/chat",
        json={"message": "later", "conversation": first.json()["conversation"], "multitask": "enqueue"},
        headers=tokens["bob"],
    )
    assert queued.status_code == 429 and queued.json()["error"]["code"] == "USER_LIMIT", queued.text
    assert client.post("/api/chat", json={"message": "mine"}, headers=tokens["ann"]).status_code == 200
    admin = {"Authorization": "Bearer admin-token"}
    assert client.post("/api/chat", json={"message": "ops"}, headers=admin).status_code == 200
    cid = first.json()["conversation"]
    assert client.post("/api/chat/cancel", json={"conversation": cid}, headers=tokens["bob"]).status_code == 200
    again = client.post("/api/chat", json={"message": "three"}, headers=tokens["bob"])
    assert again.status_code == 200, again.text


def test_a_burst_of_one_users_messages_never_passes_the_limit(make_client: Any, ollama: FakeOllama) -> None:
    """Requests racing each other all read the load before any of them had started its run:
    the store checks it again in the run's own insert. A refused new message leaves no
    empty conversation behind."""
    client = make_client(USER_MAX_ACTIVE_RUNS=2, API_TOKEN="admin-token")
    users = client.app.state.services.users()
    user = client.portal.call(users.add, "cy", Role.USER)
    token = {"Authorization": f"Bearer {client.portal.call(users.issue_token, user.id, '').token}"}
    ollama.add(*[{"stall": 20}] * 12)
    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(lambda i: client.post("/api/chat", json={"message": f"m{i}"}, headers=token), range(12)))
    codes = sorted(a.status_code for a in answers)
    assert codes == [200] * 2 + [429] * 10, [a.text for a in answers]
    listed = client.get("/api/conversations", headers=token).json()["conversations"]
    assert len(listed) == 2
    for answer in answers:
        if answer.status_code == 200:
            client.post("/api/chat/cancel", json={"conversation": answer.json()["conversation"]}, headers=token)
