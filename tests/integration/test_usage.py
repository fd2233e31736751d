"""Usage per user, model and UTC day, and the daily token quota (issue 47 item 3), on SQLite
and PostgreSQL: totals equal what the model server reported, each user sees their own, the
quota stops the next model call (never one in flight) and resets at its time, on a clock
the test controls (no sleeps)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from entrypoints.lgapi.app import create_lgapi_app
from tests.support.cli import sophos
from tests.support.fake_ollama import FakeOllama
from tests.support.metering import DAY, Setup, start_setup, turn


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return {"DATABASE_URL": request.getfixturevalue("pg_url")} if request.param == "postgres" else {}


@pytest.fixture
def make_setup(tmp_path: Path, ollama: FakeOllama, database: dict[str, str]) -> Iterator[Any]:
    made: list[Setup] = []

    def make(**settings: Any) -> Setup:
        made.append(start_setup(tmp_path, ollama, database, **settings))
        return made[-1]

    yield make
    for setup in made:
        setup.client.__exit__(None, None, None)


def usage_of(setup: Setup, who: str, **params: str) -> list[dict[str, Any]]:
    day = DAY.date().isoformat()
    answer = setup.client.get("/api/usage", params={"from": day, "to": day, **params}, headers=setup.tokens[who])
    assert answer.status_code == 200, answer.text
    rows: list[dict[str, Any]] = answer.json()["rows"]
    return rows


def test_usage_totals_equal_the_model_servers_counts_and_each_user_sees_their_own(
    make_setup: Any, ollama: FakeOllama, tmp_path: Path
) -> None:
    setup = make_setup()
    reported: dict[str, list[tuple[int, int]]] = {}
    for who, turns in (("ann", 12), ("bob", 7)):
        before = len(ollama.reported)
        cid = None
        for i in range(turns):
            if i % 4 == 1:  # now and then a tool call: two model calls in one run
                ollama.add({"tool_calls": [("demo__word_count", {"text": "a b c"})], "text": ""}, {"text": f"three {i}"})
            else:
                ollama.add({"text": f"answer number {i} " + "word " * i})
            events = turn(setup, who, {"message": f"question {i}", **({"conversation": cid} if cid else {})})
            assert events[-1][0] == "end", events[-3:]
            cid = events[0][1] if i % 5 else None  # a new conversation now and then
        reported[who] = ollama.reported[before:]
    for who in ("ann", "bob"):
        rows = usage_of(setup, who)
        (row,) = rows
        assert row["user"] == who and row["userId"].startswith("u_") and row["model"] == "qwen3"
        assert row["inputTokens"] == sum(i for i, _ in reported[who])
        assert row["outputTokens"] == sum(o for _, o in reported[who])
        assert row["calls"] == len(reported[who]) and row["estimated"] is False
        assert row["modelSeconds"] > 0 and row["toolSeconds"] > 0
    everyone = usage_of(setup, "admin", all="true")
    assert {r["user"]: r["calls"] for r in everyone} == {who: len(v) for who, v in reported.items()}
    day = DAY.date().isoformat()
    done = sophos(setup.env, tmp_path, "usage", "--from", day, "--to", day, "--all", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rows"] == everyone  # this machine's command reads the same rows
    refused = setup.client.get("/api/usage", params={"all": "true"}, headers=setup.tokens["ann"])
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "FORBIDDEN"
    bad = setup.client.get("/api/usage", params={"from": "yesterday"}, headers=setup.tokens["ann"])
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "BAD_REQUEST"
    metrics = setup.client.get("/metrics", headers=setup.tokens["admin"]).text
    total_in = sum(i for v in reported.values() for i, _ in v)
    assert f'sophos_model_tokens_total{{direction="input",model="qwen3"}} {float(total_in)}' in metrics


def test_the_quota_stops_the_next_model_call_not_the_running_one_and_resets_at_midnight(
    make_setup: Any, ollama: FakeOllama
) -> None:
    setup = make_setup(USER_DAILY_TOKENS=1)
    ollama.add({"tool_calls": [("demo__clock", {})], "text": ""}, {"text": "It is late."})
    events = turn(setup, "ann", {"message": "what time is it?"})
    cid = events[0][1]
    # the first call started under the quota and finished (its tool ran); the next was never sent
    assert len(ollama.requests) == 1
    results = [d["data"]["result"] for e, d in events if e == "trace" and d.get("event") == "result"]
    assert len(results) == 1
    assert events[-1][0] == "chat-error" and events[-1][1]["code"] == "QUOTA_EXCEEDED", events[-1]
    assert "resets at 2026-03-02 00:00 UTC" in events[-1][1]["message"]
    (row,) = usage_of(setup, "ann")
    assert (row["inputTokens"], row["outputTokens"], row["calls"]) == (*ollama.reported[0], 1)
    # a new run is refused with the reset time, on /api and on the LangGraph API
    refused = setup.client.post("/api/chat", json={"message": "again"}, headers=setup.tokens["ann"])
    midnight = datetime(2026, 3, 2, tzinfo=UTC)
    assert refused.status_code == 429, refused.text
    assert refused.json()["error"]["code"] == "QUOTA_EXCEEDED"
    assert refused.json()["error"]["resetAt"] == "2026-03-02T00:00:00.000Z"
    assert int(refused.headers["Retry-After"]) >= 1
    lg = TestClient(create_lgapi_app(setup.client.app.state.services, setup.container.settings(), asyncio.Event()))
    thread = lg.post("/threads", json={}, headers=setup.tokens["ann"]).json()["thread_id"]
    wait = lg.post(
        f"/threads/{thread}/runs/wait",
        json={"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "hi"}]}},
        headers=setup.tokens["ann"],
    )
    assert wait.status_code == 429 and wait.json()["error"]["code"] == "QUOTA_EXCEEDED", wait.text
    assert "Retry-After" in wait.headers
    # others are not held back by ann's quota
    ollama.add({"text": "hello bob"})
    assert turn(setup, "bob", {"message": "hi"})[-1][0] == "end"
    # at midnight UTC the quota resets: the stopped run resumes where it stopped
    setup.clock.now = midnight + timedelta(seconds=1)
    resumed = turn(setup, "ann", {"conversation": cid, "resume": True})
    assert resumed[-1][0] == "end", resumed[-3:]
    assert len(ollama.requests) == 3
