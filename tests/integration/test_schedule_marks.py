"""What the page needs of schedules (issue 46 item 4): a conversation's detail marks each
message a schedule's firing sent with the firing's time (`scheduledFor`), and a schedule
carries the outcome of the run it last started (`lastRun`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.testclient import TestClient

from tests.integration.test_schedules import wait_for
from tests.support.fake_ollama import FakeOllama


def settled(client: TestClient, cid: str) -> dict[str, Any] | None:
    """The conversation's detail once no run goes and nothing waits in its queue."""
    detail: dict[str, Any] = client.get(f"/api/conversations/{cid}").json()
    return detail if detail["conversation"]["status"] == "completed" and not detail.get("queued") else None


def test_the_messages_a_schedule_sent_carry_their_firings_time(client: TestClient, ollama: FakeOllama) -> None:
    ollama.latency = 0.0
    cid = client.post("/api/chat", json={"message": "hello"}).json()["conversation"]
    wait_for(lambda: settled(client, cid))
    s = client.post("/api/schedules", json={"cron": "* * * * * *", "message": "tick", "conversationId": cid}).json()["schedule"]
    assert s["lastRun"] is None  # nothing fired yet
    ollama.latency = 1.5  # a firing meets the run of the one before: queued, it starts later as a queued message

    def one_queued() -> bool:
        firings = client.get(f"/api/schedules/{s['id']}/runs").json()["firings"]
        return len(firings) >= 2 and any(f["queued"] for f in firings)

    wait_for(one_queued, timeout=30)
    assert client.patch(f"/api/schedules/{s['id']}", json={"enabled": False}).status_code == 200
    detail = wait_for(lambda: settled(client, cid))
    firings = client.get(f"/api/schedules/{s['id']}/runs").json()["firings"]
    users = [m for m in detail["messages"] if m["role"] == "user"]
    assert users[0]["content"] == "hello" and "scheduledFor" not in users[0]
    ticks = users[1:]
    assert [m["content"] for m in ticks] == ["tick"] * len(firings)
    assert sorted(m["scheduledFor"] for m in ticks) == sorted(f["scheduledFor"] for f in firings)
    assert all("scheduledFor" not in m for m in detail["messages"] if m["role"] != "user")
    [listed] = client.get("/api/schedules").json()["schedules"]
    last = listed["lastRun"]
    assert last["id"] == listed["lastRunId"] == firings[0]["runId"]
    assert (last["conversationId"], last["status"], last["error"]) == (cid, "completed", None)
    assert last["finishedAt"].endswith("Z")


def test_a_failed_firing_is_the_schedules_last_outcome(client: TestClient, ollama: FakeOllama) -> None:
    ollama.latency = 0.0
    ollama.add({"error": "model exploded"})
    at = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
    s = client.post("/api/schedules", json={"at": at, "message": "fail once"}).json()["schedule"]

    def finished() -> dict[str, Any] | None:
        got: dict[str, Any] = client.get(f"/api/schedules/{s['id']}").json()["schedule"]
        return got if got["lastRun"] and got["lastRun"]["status"] != "running" else None

    last = wait_for(finished)["lastRun"]
    [firing] = client.get(f"/api/schedules/{s['id']}/runs").json()["firings"]
    assert last["id"] == firing["runId"] and last["conversationId"] == firing["conversationId"]  # a new conversation
    assert last["status"] == "failed" and last["error"]["code"] == "AGENT_FAILURE", last
