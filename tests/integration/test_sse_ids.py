"""SSE ids name their run: a reconnect can neither skip a new run's events nor idle forever."""

from __future__ import annotations

import threading
import time
from typing import Any

from starlette.testclient import TestClient

from services.hub import REPLAY_EVENTS
from tests.support.fake_ollama import FakeOllama
from tests.support.server import event_number, sse_events

Event = tuple[str | None, str, Any]


def events(client: TestClient, cid: str, last_id: str | None = None) -> list[Event]:
    headers = {"Last-Event-ID": last_id} if last_id is not None else {}
    with client.stream("GET", f"/api/chat?conversation={cid}", headers=headers) as response:
        return list(sse_events(response))


def tag(run_id: str) -> str:
    return run_id.replace("-", "")[:8]


def test_event_ids_carry_the_run_and_replay_after_an_id_of_the_current_run(client: TestClient, ollama: FakeOllama) -> None:
    ollama.add({"text": "a b c d e f", "token_delay": 0.1})
    started = client.post("/api/chat", json={"message": "hi"}).json()
    whole = events(client, started["conversation"])
    numbered = [e for e in whole if e[0]]
    assert {e[0].split("@")[1] for e in numbered if e[0]} == {tag(started["run"])}
    assert [event_number(e[0]) for e in numbered] == list(range(1, len(numbered) + 1))
    ollama.add({"text": "g h i j k l", "token_delay": 0.1})
    second = client.post("/api/chat", json={"message": "more", "conversation": started["conversation"]}).json()
    time.sleep(0.5)
    replay = events(client, second["conversation"], last_id=f"3@{tag(second['run'])}")
    assert event_number(replay[0][0]) == 4 and replay[-1][1] == "end"


def test_an_id_from_an_earlier_run_does_not_skip_the_new_runs_first_events(client: TestClient, ollama: FakeOllama) -> None:
    ollama.add({"text": "one two three four five six seven eight"})
    first = client.post("/api/chat", json={"message": "hi"}).json()
    cid = first["conversation"]
    old = [e for e in events(client, cid) if e[0]]
    last_of_first = old[-1][0]  # what EventSource resends when it reconnects
    assert last_of_first is not None and event_number(last_of_first) > 5
    ollama.add({"text": "alpha beta gamma delta", "token_delay": 0.1})
    client.post("/api/chat", json={"message": "again", "conversation": cid})
    new = events(client, cid, last_id=last_of_first)
    assert event_number(new[0][0]) == 1
    assert "".join(e[2] for e in new if e[1] == "token") == "alpha beta gamma delta"
    assert new[-1][1] == "end"


def test_an_id_beyond_the_last_one_still_gets_the_terminal_event(make_client: Any, ollama: FakeOllama) -> None:
    client = make_client(SSE_PING_SECONDS="0.2")
    ollama.add({"text": "slow words here", "token_delay": 0.3})
    cid = client.post("/api/chat", json={"message": "hi"}).json()["conversation"]
    t0 = time.monotonic()
    got = events(client, cid, last_id="999")
    assert got[-1][1] == "end" and got[-1][2]["status"] == "completed", got
    assert time.monotonic() - t0 < 20


def test_a_reconnect_to_an_id_older_than_the_replay_buffer_gets_exactly_the_events_after_it(
    client: TestClient, ollama: FakeOllama
) -> None:
    # more events than the process keeps in memory (services.hub.REPLAY_EVENTS): the
    # oldest are replayed from the event log, the rest from the buffer, then live ones
    words = [f"w{n}" for n in range(REPLAY_EVENTS + 600)]
    ollama.add({"text": " ".join(words), "token_delay": 0.001})
    started = client.post("/api/chat", json={"message": "hi"}).json()
    cid, run = started["conversation"], tag(started["run"])
    seen: list[Event] = []

    def read_all() -> None:
        with client.stream("GET", f"/api/chat?conversation={cid}") as response:
            for event in sse_events(response):
                seen.append(event)

    reader = threading.Thread(target=read_all)
    reader.start()
    deadline = time.monotonic() + 60
    while len(seen) < REPLAY_EVENTS + 200 and time.monotonic() < deadline and reader.is_alive():
        time.sleep(0.01)
    assert seen[-1][1] == "token", "the run ended before the buffer dropped its first events"
    replay = events(client, cid, last_id=f"5@{run}")
    reader.join(60)
    whole = [e for e in seen if e[0]]
    assert [(event_number(e[0]), e[1], e[2]) for e in replay if e[0]] == [(event_number(e[0]), e[1], e[2]) for e in whole[5:]]
    assert "".join(e[2] for e in replay if e[1] == "token").split() == words[len([e for e in whole[:5] if e[1] == "token"]) :]
