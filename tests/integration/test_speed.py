"""The fast path on a real `sophos serve`: the run's stream straight from the POST that starts
it, uvloop under uvicorn, and the fsyncs a turn costs."""

from __future__ import annotations

import asyncio
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import AsyncGenerator, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from domain.events import StreamEvent
from entrypoints.http import sse
from services.hub import RunStream
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.server import LiveServer, sse_events

SSE = {"Accept": "text/event-stream"}


@pytest.fixture(scope="module")
def ollama() -> Iterator[FakeOllama]:
    with fake_ollama(nodelay=True) as fake:
        yield fake


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, ollama: FakeOllama) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("speed")
    # started the usual way: these tests read what the process loaded and how its heap behaves
    live = LiveServer(app_env(tmp, ollama.url, TOOLS_BACKEND="none"), tmp, fork=False).start()
    yield live
    live.stop()


def streamed_post(server: LiveServer, body: dict[str, Any]) -> tuple[httpx.Response, list[tuple[str | None, str, Any]]]:
    with httpx.stream("POST", f"{server.url}/api/chat", json=body, headers=SSE, timeout=30) as r:
        return r, list(sse_events(r)) if r.status_code == 200 else []


def test_a_post_that_accepts_event_stream_streams_the_run_it_starts(server: LiveServer, ollama: FakeOllama) -> None:
    ollama.add({"text": "one two three four", "token_delay": 0.1})
    seen_by_get: list[Any] = []
    ids: dict[str, str] = {}

    def follow_with_get() -> None:  # a second client on the same run, through the seed's GET
        while "cid" not in ids:
            time.sleep(0.01)
        with httpx.stream("GET", f"{server.url}/api/chat", params={"conversation": ids["cid"]}, timeout=30) as r:
            seen_by_get.extend(sse_events(r))

    getter = threading.Thread(target=follow_with_get)
    getter.start()
    with httpx.stream("POST", f"{server.url}/api/chat", json={"message": "hi"}, headers=SSE, timeout=30) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        ids["cid"] = r.headers["x-conversation-id"]
        events = list(sse_events(r))
    getter.join(30)
    cid, run = ids["cid"], r.headers["x-run-id"]
    numbered = [e for e in events if e[0] is not None]
    tag = run.replace("-", "")[:8]  # ids are <n>@<run tag>, n from 1
    assert [e[0] for e in numbered] == [f"{n}@{tag}" for n in range(1, len(numbered) + 1)]
    assert "".join(e[2] for e in events if e[1] == "token") == "one two three four"
    assert events[-1] == (f"{len(numbered)}@{tag}", "end", {"conversation": cid, "status": "completed"})
    assert seen_by_get == events  # the same events, ids and bytes as GET /api/chat sends
    detail = server.get(f"/api/conversations/{cid}").json()
    assert detail["conversation"]["status"] == "completed" and len(detail["messages"]) == 2
    assert server.get("/api/openapi.json").json()["paths"]["/api/chat"]["post"]["responses"]["200"]["headers"]
    assert run


def test_a_fast_run_streamed_from_its_post_misses_nothing(server: LiveServer, ollama: FakeOllama) -> None:
    ollama.add({"text": "quick"})  # over before any GET could attach
    r, events = streamed_post(server, {"message": "fast"})
    assert [e[1] for e in events][-1] == "end" and "quick" in [e[2] for e in events if e[1] == "token"]
    assert events[0][0] == "1@" + r.headers["x-run-id"].replace("-", "")[:8]  # from the first event
    # the next turn of the same conversation, streamed too
    r2, again = streamed_post(server, {"message": "more", "conversation": r.headers["x-conversation-id"]})
    assert r2.headers["x-conversation-id"] == r.headers["x-conversation-id"] and again[-1][1] == "end"


def test_a_streamed_post_refuses_bad_input_with_the_json_envelope(server: LiveServer) -> None:
    r, _ = streamed_post(server, {"message": "   "})
    assert r.status_code == 400 and r.headers["content-type"].startswith("application/json")
    r, _ = streamed_post(server, {"message": "hi", "conversation": "00000000-0000-4000-8000-000000000000"})
    assert r.status_code == 404


def test_the_post_without_accept_still_answers_json_at_once(server: LiveServer) -> None:
    r = server.post("/api/chat", {"message": "hi"})
    assert r.status_code == 200 and set(r.json()) == {"conversation", "run"}
    assert "x-run-id" not in r.headers


def test_the_server_runs_on_uvloop(server: LiveServer) -> None:
    assert server.proc is not None
    maps = Path(f"/proc/{server.proc.pid}/maps").read_text()
    assert "/uvloop/" in maps and "/httptools/" in maps


def young_collections(server: LiveServer) -> float:
    metrics = server.get("/metrics").text
    line = next(x for x in metrics.splitlines() if x.startswith('python_gc_collections_total{generation="0"}'))
    return float(line.split()[-1])


def test_the_server_collects_its_youngest_objects_rarely(server: LiveServer) -> None:
    """CPython's default (every 700 net allocations) ran the collector about every other turn
    and cost ~9% of the server's CPU; with the server's threshold 20 turns take at most two."""
    cid = server.post("/api/chat", {"message": "warm"}).json()["conversation"]
    streamed_post(server, {"message": "warm", "conversation": cid})
    before = young_collections(server)
    for i in range(20):
        _, events = streamed_post(server, {"message": f"turn {i}", "conversation": cid})
        assert events[-1][1] == "end"
    assert young_collections(server) - before <= 2


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_a_turn_without_tools_syncs_the_file_twice(server: LiveServer, tmp_path: Path) -> None:
    """The checkpoint holding the message (it makes the run row before it durable too) and
    the outcome: every other commit of the turn rides on the next synced one (it used to be
    seven, then three)."""
    assert server.proc is not None
    cid = server.post("/api/chat", {"message": "warm"}).json()["conversation"]
    streamed_post(server, {"message": "warm", "conversation": cid})
    # its turns counted (an unsynced write after the run, services.after_runs) before the WAL
    # is emptied: that write must not be the first commit after it
    deadline = time.monotonic() + 10
    while server.get("/api/conversations?fields=all").json()["conversations"][0]["turns"] != 2:
        assert time.monotonic() < deadline, "the turns were not counted"
        time.sleep(0.05)
    # an empty WAL first, so none of SQLite's automatic WAL checkpoints (each with fsyncs of
    # its own) lands among these few turns
    with closing(sqlite3.connect(server.env["DATABASE_PATH"])) as db:
        assert db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0  # not blocked
    out = tmp_path / "strace.txt"
    spy = subprocess.Popen(
        ["strace", "-f", "-qq", "-e", "trace=fsync,fdatasync", "-o", str(out), "-p", str(server.proc.pid)],
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # attached to every thread
        turns = 5
        for i in range(turns):
            _, events = streamed_post(server, {"message": f"turn {i}", "conversation": cid})
            assert events[-1][1] == "end"
        time.sleep(0.3)
    finally:
        spy.send_signal(signal.SIGINT)
        spy.wait(10)
    syncs = [line for line in out.read_text().splitlines() if "sync(" in line]
    # the message and the outcome of each turn; and once, the first commit after the emptied
    # WAL starts it over and syncs its new header
    assert len(syncs) == 2 * turns + 1, syncs


async def test_a_streamed_batch_is_one_write_with_every_event_in_the_wire_format() -> None:
    async def one_batch() -> AsyncGenerator[list[tuple[int, StreamEvent]], None]:
        yield [(1, StreamEvent("token", "Hi")), (2, StreamEvent("end", {"status": "completed"}))]

    run = "0123abcd-0000-4000-8000-000000000000"
    response = sse.follow(RunStream(run, one_batch()), 15.0, asyncio.Event())
    chunks = [chunk async for chunk in response.body_iterator]
    assert chunks == [
        b'id: 1@0123abcd\nevent: token\ndata: "Hi"\n\nid: 2@0123abcd\nevent: end\ndata: {"status": "completed"}\n\n'
    ]
