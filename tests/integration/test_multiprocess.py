"""Runs owned by the database: several real `sophos serve` processes on one SQLite file.

Streams and cancel from any process, a paused owner fenced out after a takeover, adoption
of a killed owner's run, the event loop never waiting on a locked or read-only file.
Figures (stream delay, cancel latency, adoption time, healthz latency) are printed.
"""

from __future__ import annotations

import asyncio
import random
import signal
import sqlite3
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.server import LiveServer, sse_events

Event = tuple[str | None, str, Any]


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with fake_ollama() as fake:
        yield fake


@pytest.fixture
def servers() -> Iterator[list[LiveServer]]:
    started: list[LiveServer] = []
    yield started
    for server in started:
        if server.proc is not None and server.proc.poll() is None:
            server.proc.send_signal(signal.SIGCONT)
        server.stop()


def launch(servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama, **settings: Any) -> LiveServer:
    env = app_env(tmp_path, ollama.url, TOOLS_BACKEND="none", **settings)
    server = LiveServer(env, tmp_path).start()
    servers.append(server)
    return server


def db(tmp_path: Path) -> sqlite3.Connection:
    return sqlite3.connect(tmp_path / "db" / "sophos.db", timeout=30)


def runs_of(tmp_path: Path, cid: str) -> list[tuple[str, str, str, str | None]]:
    with db(tmp_path) as conn:
        return conn.execute(
            "SELECT id, status, trigger, error_code FROM runs WHERE conversation_id = ? ORDER BY started_at, rowid",
            (cid,),
        ).fetchall()


def wait_until(predicate: Any, timeout: float = 20, step: float = 0.02) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return time.monotonic() - start
        time.sleep(step)
    raise AssertionError("condition not met in time")


class Recorder(threading.Thread):
    """Follows a conversation's stream on one server, stamping each event's arrival."""

    def __init__(self, server: LiveServer, cid: str) -> None:
        super().__init__(daemon=True)
        self.server, self.cid = server, cid
        self.events: list[tuple[float, Event]] = []
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            with httpx.stream("GET", f"{self.server.url}/api/chat", params={"conversation": self.cid}, timeout=60) as r:
                for event in sse_events(r):
                    self.events.append((time.monotonic(), event))
        except httpx.HTTPError as e:  # the server was killed under the stream
            self.error = e

    def numbered(self) -> list[Event]:
        return [e for _, e in self.events if e[0] is not None]


def test_a_stream_on_another_process_shows_the_run_token_by_token(
    servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama
) -> None:
    a = launch(servers, tmp_path, ollama)
    b = launch(servers, tmp_path, ollama)
    ollama.add({"text": " ".join(f"w{i}" for i in range(30)), "token_delay": 0.05})
    cid = a.post("/api/chat", {"message": "hello"}).json()["conversation"]
    on_a, on_b = Recorder(a, cid), Recorder(b, cid)
    on_a.start()
    on_b.start()
    on_a.join(30)
    on_b.join(30)
    assert on_b.numbered() == on_a.numbered()  # the same events, ids and terminal event
    tokens = [e for e in on_b.numbered() if e[1] == "token"]
    assert len(tokens) == 30 and on_b.numbered()[-1][1:] == ("end", {"conversation": cid, "status": "completed"})
    arrived_a = {e[0]: t for t, e in on_a.events if e[0] is not None}
    delays = [t - arrived_a[e[0]] for t, e in on_b.events if e[0] is not None and e[0] in arrived_a]
    # the tokens reached B while the run went on, not in one lump at its end
    token_times = [t for t, e in on_b.events if e[1] == "token"]
    assert token_times[-1] - token_times[0] > 0.5
    print(
        f"\nstream delay across processes: median {statistics.median(delays) * 1000:.0f} ms, "
        f"max {max(delays) * 1000:.0f} ms over {len(delays)} events"
    )
    # a reconnect to B with Last-Event-ID replays only what follows
    with httpx.stream("GET", f"{b.url}/api/chat", params={"conversation": cid}, headers={"Last-Event-ID": "5"}, timeout=30) as r:
        replay = [e for e in sse_events(r)]
    assert replay == on_a.numbered()[5:]


def test_cancel_on_another_process_stops_the_run(servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama) -> None:
    a = launch(servers, tmp_path, ollama)
    b = launch(servers, tmp_path, ollama)
    ollama.add({"text": "word " * 200, "token_delay": 0.05})
    cid = a.post("/api/chat", {"message": "long"}).json()["conversation"]
    on_a = Recorder(a, cid)
    on_a.start()
    wait_until(lambda: len(on_a.events) > 3)
    t0 = time.monotonic()
    answer = b.post("/api/chat/cancel", {"conversation": cid})
    latency = time.monotonic() - t0
    assert answer.status_code == 200 and answer.json()["status"] == "cancelled"
    on_a.join(10)
    assert on_a.numbered()[-1][1:] == ("end", {"conversation": cid, "status": "cancelled"})
    assert [r[1] for r in runs_of(tmp_path, cid)] == ["cancelled"]
    assert b.post("/api/chat/cancel", {"conversation": cid}).status_code == 409
    print(f"\ncancel latency across processes: {latency * 1000:.0f} ms")


def test_a_paused_owner_is_taken_over_and_writes_nothing_after_it_continues(
    servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama
) -> None:
    a = launch(servers, tmp_path, ollama, RUN_LEASE_SECONDS="2")
    b = launch(servers, tmp_path, ollama, RUN_LEASE_SECONDS="2", AUTO_RESUME="true")
    ollama.add({"text": "slow " * 60, "token_delay": 0.1}, {"text": "the adopted answer"})
    cid = a.post("/api/chat", {"message": "hello"}).json()["conversation"]
    on_a = Recorder(a, cid)
    on_a.start()
    wait_until(lambda: len(on_a.events) > 3)
    a.signal(signal.SIGSTOP)
    paused = time.monotonic()
    took = wait_until(lambda: [r[1] for r in runs_of(tmp_path, cid)] == ["interrupted", "completed"], timeout=30)
    first_run = runs_of(tmp_path, cid)[0][0]
    with db(tmp_path) as conn:
        before = conn.execute("SELECT checkpoint_id FROM checkpoint_log WHERE run_id = ?", (first_run,)).fetchall()
        events_before = conn.execute("SELECT count(*) FROM run_events WHERE run_id = ?", (first_run,)).fetchone()
    a.signal(signal.SIGCONT)
    on_a.join(15)
    # the paused owner learns it lost the run: never "completed"
    assert on_a.numbered()[-1][1] == "chat-error" and on_a.numbered()[-1][2]["code"] == "RUN_LOST"
    time.sleep(1.0)
    with db(tmp_path) as conn:
        after = conn.execute("SELECT checkpoint_id FROM checkpoint_log WHERE run_id = ?", (first_run,)).fetchall()
        events_after = conn.execute("SELECT count(*) FROM run_events WHERE run_id = ?", (first_run,)).fetchone()
    assert after == before and events_after == events_before
    runs = runs_of(tmp_path, cid)
    assert [(r[1], r[2]) for r in runs] == [("interrupted", "user"), ("completed", "adopt")]
    detail = b.get(f"/api/conversations/{cid}").json()
    assert detail["messages"][-1]["content"] == "the adopted answer"
    print(f"\ntakeover of a paused owner: {took:.2f} s after SIGSTOP (lease 2 s); paused {time.monotonic() - paused:.1f} s")


def test_a_killed_owners_run_is_adopted_exactly_once(servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama) -> None:
    a = launch(servers, tmp_path, ollama, RUN_LEASE_SECONDS="3")
    launch(servers, tmp_path, ollama, RUN_LEASE_SECONDS="3", AUTO_RESUME="true")
    launch(servers, tmp_path, ollama, RUN_LEASE_SECONDS="3", AUTO_RESUME="true")
    ollama.add({"text": "slow " * 100, "token_delay": 0.05}, {"text": "adopted"}, {"text": "twice?"})
    cid = a.post("/api/chat", {"message": "hello"}).json()["conversation"]
    on_a = Recorder(a, cid)
    on_a.start()
    wait_until(lambda: len(on_a.events) > 3)
    a.kill()
    took = wait_until(lambda: [r[1] for r in runs_of(tmp_path, cid)] == ["interrupted", "completed"], timeout=30)
    time.sleep(2.0)  # a second adopter would have started by now
    runs = runs_of(tmp_path, cid)
    assert [(r[1], r[2]) for r in runs] == [("interrupted", "user"), ("completed", "adopt")]
    print(f"\nadoption after kill -9: {took:.2f} s (lease 3 s, maintenance every 1 s)")


def test_a_write_lock_held_elsewhere_never_stalls_the_event_loop(
    servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama
) -> None:
    server = launch(servers, tmp_path, ollama, DATABASE_BUSY_TIMEOUT="1")
    ollama.add({"text": "done"})
    cid = server.post("/api/chat", {"message": "before"}).json()["conversation"]
    wait_until(lambda: runs_of(tmp_path, cid) and runs_of(tmp_path, cid)[0][1] == "completed")
    holder = subprocess.Popen(
        [
            "python3",
            "-c",
            "import sqlite3,sys,time;c=sqlite3.connect(sys.argv[1],isolation_level=None);"
            "c.execute('BEGIN IMMEDIATE');print('locked',flush=True);time.sleep(10)",
            str(tmp_path / "db" / "sophos.db"),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"locked"
        post = threading.Thread(target=lambda: server.post("/api/chat", {"message": "x", "conversation": cid}))
        post.start()
        timings = []
        for _ in range(20):
            t = time.monotonic()
            assert server.get("/api/healthz").status_code == 200
            timings.append(time.monotonic() - t)
            time.sleep(0.05)
        t = time.monotonic()
        assert server.get("/api/conversations").status_code == 200  # a read: WAL readers never wait
        read_time = time.monotonic() - t
        refused = server.post("/api/chat", {"message": "during the lock", "conversation": cid})
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "STORAGE_FAILURE"
        post.join(10)
        print(
            f"\nhealthz under a held write lock: max {max(timings) * 1000:.0f} ms, "
            f"median {statistics.median(timings) * 1000:.1f} ms; conversation list {read_time * 1000:.0f} ms"
        )
        assert max(timings) < 0.5 and read_time < 0.5
    finally:
        holder.kill()
        holder.wait()


def test_a_read_only_database_answers_503_and_recovers(servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama) -> None:
    server = launch(servers, tmp_path, ollama)
    ollama.add({"text": "first"}, {"text": "after"})
    cid = server.post("/api/chat", {"message": "before"}).json()["conversation"]
    wait_until(lambda: runs_of(tmp_path, cid) and runs_of(tmp_path, cid)[0][1] == "completed")
    files = [p for p in (tmp_path / "db").iterdir() if p.name.startswith("sophos.db")]
    subprocess.run(["chattr", "+i", *map(str, files)], check=True)
    try:
        for call in (
            lambda: server.post("/api/chat", {"message": "new"}),
            lambda: server.post("/api/chat", {"message": "next", "conversation": cid}),
            lambda: httpx.patch(f"{server.url}/api/conversations/{cid}", json={"title": "x"}, timeout=30),
        ):
            answer = call()
            assert answer.status_code == 503 and answer.json()["error"]["code"] == "STORAGE_FAILURE", answer.text
        assert server.get("/api/healthz").status_code == 200
    finally:
        subprocess.run(["chattr", "-i", *map(str, files)], check=True)
    later = server.post("/api/chat", {"message": "next", "conversation": cid})
    assert later.status_code == 200
    wait_until(lambda: runs_of(tmp_path, cid)[-1][1] == "completed")


async def test_start_and_cancel_sent_together_always_end(servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama) -> None:
    server = launch(servers, tmp_path, ollama, SHUTDOWN_TIMEOUT="3")
    for _ in range(60):
        ollama.add({"text": "a b c d", "token_delay": 0.01})
    rng = random.Random(11)

    async def cancel_after(client: httpx.AsyncClient, cid: str, delay: float) -> httpx.Response:
        await asyncio.sleep(delay)
        return await client.post("/api/chat/cancel", json={"conversation": cid})

    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        cid = (await client.post("/api/chat", json={"message": "first"})).json()["conversation"]
        seen: dict[int, int] = {}
        for i in range(40):
            wait_until(lambda: all(r[1] != "running" for r in runs_of(tmp_path, cid)), timeout=10)
            # the cancel lands anywhere: before the run exists, before its first step, mid-run, after
            post, cancel = await asyncio.gather(
                client.post("/api/chat", json={"message": f"m{i}", "conversation": cid}),
                cancel_after(client, cid, rng.choice([0.0, 0.0, 0.002, 0.005, 0.01, 0.02, 0.05])),
            )
            assert post.status_code == 200, post.text  # acknowledged means the message is saved
            assert cancel.status_code in (200, 409), cancel.text  # 409: it came before the run
            seen[cancel.status_code] = seen.get(cancel.status_code, 0) + 1
        wait_until(lambda: all(r[1] != "running" for r in runs_of(tmp_path, cid)), timeout=10)
    statuses = [r[1] for r in runs_of(tmp_path, cid)]
    assert len(statuses) == 41 and "running" not in statuses
    messages = httpx.get(f"{server.url}/api/conversations/{cid}", timeout=10).json()["messages"]
    assert [m["content"] for m in messages if m["role"] == "user"] == ["first", *(f"m{i}" for i in range(40))]
    print(f"\nstart/cancel pairs: cancels answered {seen}; statuses {sorted(set(statuses))}")
    t = time.monotonic()
    server.signal(signal.SIGTERM)
    assert server.wait(3 + 5) == 0
    print(f"SIGTERM to exit: {time.monotonic() - t:.2f} s")
