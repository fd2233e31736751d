"""Several real `sophos serve` processes on one PostgreSQL database: any of them serves any
conversation. One active run per conversation across processes, streams and cancel from
any process, adoption of a killed owner's runs exactly once (unsafe calls wait for a
person), a paused owner never taken over while its session lives, five processes started
at once on an empty database, and a PostgreSQL restart in the middle of a run.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.integration.test_multiprocess import Recorder, wait_until
from tests.support.app import app_env, config_dir, ledger_server_entry
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.postgres import PostgresServer, create_database
from tests.support.server import LiveServer


@pytest.fixture(scope="module")
def ollama() -> Iterator[FakeOllama]:
    with fake_ollama() as fake:
        yield fake


@pytest.fixture
def servers() -> Iterator[list[LiveServer]]:
    started: list[LiveServer] = []
    yield started
    stop(started)


def stop(servers: list[LiveServer]) -> None:
    for server in servers:
        if server.proc is not None and server.proc.poll() is None:
            server.proc.send_signal(signal.SIGCONT)
        server.stop()


def launch(
    servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama, url: str, count: int = 1, **settings: Any
) -> list[LiveServer]:
    """`count` servers on the database at `url`, started at once."""
    settings.setdefault("TOOLS_BACKEND", "none")
    env = app_env(tmp_path, ollama.url, DATABASE_URL=url, **settings)
    started = [LiveServer(env, tmp_path) for _ in range(count)]
    servers.extend(started)
    threads = [threading.Thread(target=s.start, kwargs={"timeout": 120}) for s in started]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in started:
        assert s.get("/api/healthz").status_code == 200, s.log.read_text()
    return started


# The three processes most tests share (starting one costs seconds on a loaded machine): the
# ledger MCP server for tools, leases of 3 s, adopting orphaned runs.
SHARED = {"TOOLS_BACKEND": "mcp", "RUN_LEASE_SECONDS": "3", "AUTO_RESUME": "true", "SHUTDOWN_TIMEOUT": "2"}


@dataclass
class Cluster:
    url: str
    home: Path
    book: Path
    servers: list[LiveServer]


@pytest.fixture(scope="module")
def cluster(postgres_url: str, tmp_path_factory: pytest.TempPathFactory, ollama: FakeOllama) -> Iterator[Cluster]:
    home = tmp_path_factory.mktemp("cluster")
    book = home / "ledger.jsonl"
    config_dir(home, {"ledger": ledger_server_entry(book)})
    url = create_database(postgres_url)
    servers: list[LiveServer] = []
    try:
        launch(servers, home, ollama, url, 3, **SHARED)
        yield Cluster(url, home, book, servers)
    finally:
        stop(servers)


def runs_of(url: str, cid: str) -> list[tuple[str, str, str, str | None]]:
    with psycopg.connect(url) as conn:
        return conn.execute(
            'SELECT id, status, "trigger", error_code FROM runs WHERE conversation_id = %s ORDER BY started_at, n',
            (cid,),
        ).fetchall()


def statuses(url: str, cid: str) -> list[str]:
    return [r[1] for r in runs_of(url, cid)]


def test_concurrent_posts_on_one_conversation_over_three_processes_accept_exactly_one(
    cluster: Cluster, ollama: FakeOllama
) -> None:
    a, b, c = cluster.servers
    pg_url = cluster.url
    ollama.add({"text": "first"})
    cid = a.post("/api/chat", {"message": "hello"}).json()["conversation"]
    wait_until(lambda: statuses(pg_url, cid) == ["completed"])
    for round_ in range(3):
        ollama.add({"text": "slow " * 20, "token_delay": 0.05})
        answers: list[httpx.Response] = []
        barrier = threading.Barrier(3)

        def post(server: LiveServer, n: int, barrier: threading.Barrier, answers: list[httpx.Response]) -> None:
            barrier.wait()
            answers.append(server.post("/api/chat", {"message": f"m{n}", "conversation": cid}))

        threads = [threading.Thread(target=post, args=(s, round_, barrier, answers)) for s in (a, b, c)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        codes = sorted(r.status_code for r in answers)
        assert codes == [200, 409, 409], [r.text for r in answers]
        assert {r.json()["error"]["code"] for r in answers if r.status_code == 409} == {"SESSION_IN_PROGRESS"}
        wait_until(lambda: "running" not in statuses(pg_url, cid))
    assert statuses(pg_url, cid) == ["completed"] * 4


def test_streams_on_b_and_c_show_the_events_of_a_run_on_a(cluster: Cluster, ollama: FakeOllama) -> None:
    a, b, c = cluster.servers
    ollama.add({"text": " ".join(f"w{i}" for i in range(30)), "token_delay": 0.05})
    cid = a.post("/api/chat", {"message": "hello"}).json()["conversation"]
    recorders = [Recorder(s, cid) for s in (a, b, c)]
    for r in recorders:
        r.start()
    for r in recorders:
        r.join(30)
    on_a, on_b, on_c = (r.numbered() for r in recorders)
    assert on_b == on_a and on_c == on_a
    assert len([e for e in on_a if e[1] == "token"]) == 30
    assert on_a[-1][1:] == ("end", {"conversation": cid, "status": "completed"})
    token_times = [t for t, e in recorders[2].events if e[1] == "token"]
    assert token_times[-1] - token_times[0] > 0.5  # followed live, not in one lump at the end


def test_cancel_through_c_stops_a_run_on_a(cluster: Cluster, ollama: FakeOllama) -> None:
    a, _, c = cluster.servers
    pg_url = cluster.url
    ollama.add({"text": "word " * 200, "token_delay": 0.05})
    cid = a.post("/api/chat", {"message": "long"}).json()["conversation"]
    on_a = Recorder(a, cid)
    on_a.start()
    wait_until(lambda: len(on_a.events) > 3)
    answer = c.post("/api/chat/cancel", {"conversation": cid})
    assert answer.status_code == 200 and answer.json()["status"] == "cancelled"
    on_a.join(10)
    assert on_a.numbered()[-1][1:] == ("end", {"conversation": cid, "status": "cancelled"})
    assert statuses(pg_url, cid) == ["cancelled"]


def ledger(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def test_a_killed_owners_runs_are_adopted_exactly_once_and_unsafe_calls_wait_for_a_decision(
    cluster: Cluster, servers: list[LiveServer], ollama: FakeOllama
) -> None:
    book, pg_url = cluster.book, cluster.url
    (a,) = launch(servers, cluster.home, ollama, pg_url, **{**SHARED, "AUTO_RESUME": "false"})
    ollama.add({"tool_calls": [("ledger__append", {"label": "safe", "delay": 4})]})
    safe = a.post("/api/chat", {"message": "append"}).json()["conversation"]
    wait_until(lambda: any(e["label"] == "safe" for e in ledger(book)))
    ollama.add({"tool_calls": [("ledger__charge", {"amount": 5, "delay": 4})]}, {"text": "adopted and done"})
    unsafe = a.post("/api/chat", {"message": "charge"}).json()["conversation"]
    wait_until(lambda: any(e["label"] == "charge-5" for e in ledger(book)))
    a.kill()
    took = wait_until(lambda: statuses(pg_url, safe) == ["interrupted", "completed"], timeout=60)
    time.sleep(2.0)  # a second adopter would have started by now
    assert [(r[1], r[2]) for r in runs_of(pg_url, safe)] == [("interrupted", "user"), ("completed", "adopt")]
    starts = [e for e in ledger(book) if e["label"] == "safe" and e["event"] == "start"]
    assert len(starts) == 2 and starts[0]["key"] == starts[1]["key"]  # in flight at the kill: once more, same key
    assert statuses(pg_url, unsafe) == ["interrupted"]  # not adopted: a person decides
    detail = cluster.servers[0].get(f"/api/conversations/{unsafe}").json()
    assert detail["decisionRequired"] is True
    assert len([e for e in ledger(book) if e["label"] == "charge-5" and e["event"] == "start"]) == 1
    print(f"\nadoption after kill -9 on PostgreSQL: {took:.2f} s")


def test_a_paused_owner_is_never_taken_over_while_its_session_lives(
    cluster: Cluster, servers: list[LiveServer], ollama: FakeOllama
) -> None:
    pg_url = cluster.url
    (a,) = launch(servers, cluster.home, ollama, pg_url, **SHARED)
    ollama.add({"text": "slow " * 40, "token_delay": 0.05})
    cid = a.post("/api/chat", {"message": "hello"}).json()["conversation"]
    on_a = Recorder(a, cid)
    on_a.start()
    wait_until(lambda: len(on_a.events) > 3)
    a.signal(signal.SIGSTOP)
    time.sleep(5.0)  # past the 3 s lease: the heartbeat is stale, the session lock is held
    assert statuses(pg_url, cid) == ["running"]
    a.signal(signal.SIGCONT)
    on_a.join(30)
    assert on_a.numbered()[-1][1:] == ("end", {"conversation": cid, "status": "completed"})
    assert statuses(pg_url, cid) == ["completed"]


def test_five_processes_started_at_once_on_an_empty_database_all_come_up(
    servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama, pg_empty_url: str
) -> None:
    pg_url = pg_empty_url
    five = launch(servers, tmp_path, ollama, pg_url, 5)
    ollama.add(*[{"text": f"answer {i}"} for i in range(5)])
    cids = [s.post("/api/chat", {"message": f"hi {i}"}).json()["conversation"] for i, s in enumerate(five)]
    for cid in cids:
        wait_until(lambda cid=cid: statuses(pg_url, cid) == ["completed"])
    listed = {c["id"] for c in five[0].get("/api/conversations").json()["conversations"]}
    assert set(cids) <= listed


@pytest.mark.slow
def test_a_postgres_restart_mid_run_fails_that_run_resumably_and_later_requests_succeed(
    servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama
) -> None:
    pg = PostgresServer().start()  # a server of its own: the restart cuts every session on it
    try:
        url = create_database(pg.url)
        (a,) = launch(servers, tmp_path, ollama, url, RUN_LEASE_SECONDS="3", DATABASE_BUSY_TIMEOUT="1")
        ollama.add({"text": "slow " * 30, "token_delay": 0.05}, {"text": "resumed"}, {"text": "later"})
        cid = a.post("/api/chat", {"message": "hello"}).json()["conversation"]
        on_a = Recorder(a, cid)
        on_a.start()
        wait_until(lambda: len(on_a.events) > 3)
        pg.pg_ctl("stop")  # down while the model answers: the run's next checkpoint cannot be written
        on_a.join(30)
        pg.pg_ctl("start")
        last = on_a.numbered()[-1]
        assert last[1] == "chat-error" and last[2]["code"] == "STORAGE_FAILURE", last
        wait_until(lambda: runs_of(url, cid)[-1][1:] in (("failed", "user", "STORAGE_FAILURE"),), timeout=30)
        codes = [a.get("/api/conversations").status_code for _ in range(20)]
        assert set(codes) == {200}
        detail = a.get(f"/api/conversations/{cid}").json()
        assert detail["resumable"] is True
        resumed = a.post("/api/chat", {"conversation": cid, "resume": True})
        assert resumed.status_code == 200, resumed.text
        wait_until(lambda: statuses(url, cid)[-1] == "completed")
        later = a.post("/api/chat", {"message": "and now?", "conversation": cid})
        assert later.status_code == 200, later.text
        wait_until(lambda: statuses(url, cid) == ["failed", "completed", "completed"])
    finally:
        for s in servers:
            s.stop()
        pg.stop()


def test_a_queue_enqueued_on_b_drains_on_b_or_c_after_its_runs_owner_a_is_killed(
    cluster: Cluster, servers: list[LiveServer], ollama: FakeOllama
) -> None:
    pg_url = cluster.url
    (a,) = launch(servers, cluster.home, ollama, pg_url, **SHARED)
    b = cluster.servers[1]
    ollama.add({"text": "slow " * 200, "token_delay": 0.05}, {"text": "resumed"}, {"text": "one"}, {"text": "two"})
    cid = a.post("/api/chat", {"message": "long"}).json()["conversation"]
    wait_until(lambda: "activeRun" in b.get(f"/api/conversations/{cid}").json())
    for text in ("q1", "q2"):
        sent = b.post("/api/chat", {"message": text, "conversation": cid, "multitask": "enqueue"})
        assert sent.status_code == 200 and sent.headers["X-Queued-Id"] == sent.json()["queued"]["id"], sent.text
    assert [q["text"] for q in b.get(f"/api/conversations/{cid}").json()["queued"]] == ["q1", "q2"]
    a.kill()
    wait_until(lambda: statuses(pg_url, cid)[-1:] == ["completed"] and len(statuses(pg_url, cid)) == 4, timeout=90)
    assert [(r[1], r[2]) for r in runs_of(pg_url, cid)] == [
        ("interrupted", "user"),
        ("completed", "adopt"),
        ("completed", "queue"),
        ("completed", "queue"),
    ]
    detail = cluster.servers[2].get(f"/api/conversations/{cid}").json()
    assert [m["content"] for m in detail["messages"] if m["role"] == "user"] == ["long", "q1", "q2"]
    assert "queued" not in detail
