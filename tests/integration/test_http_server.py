"""A real `sophos serve` subprocess: SSE on the wire, races, cancel, SIGTERM drain."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.app import app_env, config_dir, ledger_server_entry
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.server import LiveServer, event_number, sse_events, stream


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with fake_ollama() as fake:
        yield fake


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[LiveServer]]:
    started: list[LiveServer] = []
    yield started
    for server in started:
        server.stop()


def launch(servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama, **settings: Any) -> LiveServer:
    env = app_env(tmp_path, ollama.url, **settings)
    server = LiveServer(env, tmp_path).start()
    servers.append(server)
    return server


def ledger(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def wait_until(predicate: Any, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_sse_replays_after_last_event_id_and_pings_without_ids(
    servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama
) -> None:
    server = launch(servers, tmp_path, ollama, TOOLS_BACKEND="none", SSE_PING_SECONDS="0.2")
    ollama.add({"text": "one two three four five six", "token_delay": 0.25})
    cid = server.post("/api/chat", {"message": "hi"}).json()["conversation"]
    first = stream(server, cid)
    pings = [e for e in first if e[1] == "ping"]
    assert pings and all(e[0] is None and e[2] == "" for e in pings)
    numbered = [e for e in first if e[0] is not None]
    assert [event_number(e[0]) for e in numbered] == list(range(1, len(numbered) + 1))
    assert numbered[-1][1] == "end" and numbered[-1][2]["status"] == "completed"
    # after the run, a reconnect with Last-Event-ID gets what it missed from the run event log;
    # without one, the durable answer
    assert stream(server, cid, last_id=3) == numbered[3:]
    assert stream(server, cid) == [(None, "end", {"conversation": cid, "status": "completed"})]


def test_a_reconnect_mid_run_resumes_after_the_last_seen_id(
    servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama
) -> None:
    server = launch(servers, tmp_path, ollama, TOOLS_BACKEND="none")
    ollama.add({"text": "a b c d e f g h i j", "token_delay": 0.15})
    cid = server.post("/api/chat", {"message": "hi"}).json()["conversation"]
    seen: list[Any] = []
    with httpx.stream("GET", f"{server.url}/api/chat", params={"conversation": cid}, timeout=30) as r:
        for event in sse_events(r):
            seen.append(event)
            if len(seen) == 4:
                break  # the connection drops
    rest = stream(server, cid, last_id=seen[-1][0])  # as EventSource resends it
    ids = [event_number(e[0]) for e in seen + rest if e[0]]
    assert ids == list(range(1, len(ids) + 1))  # nothing lost, nothing doubled
    tokens = "".join(e[2] for e in seen + rest if e[1] == "token")
    assert tokens == "a b c d e f g h i j"


def test_twenty_concurrent_posts_start_exactly_one_run(servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama) -> None:
    server = launch(servers, tmp_path, ollama, TOOLS_BACKEND="none")
    cid = server.post("/api/chat", {"message": "first"}).json()["conversation"]
    stream(server, cid)
    ollama.default = {"text": "slow " * 20, "token_delay": 0.05}
    results: list[httpx.Response] = []
    barrier = threading.Barrier(20)

    def post() -> None:
        barrier.wait()
        results.append(server.post("/api/chat", {"message": "race", "conversation": cid}))

    threads = [threading.Thread(target=post) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    codes = sorted(r.status_code for r in results)
    assert codes == [200] + [409] * 19
    assert all(r.json()["error"]["code"] == "SESSION_IN_PROGRESS" for r in results if r.status_code == 409)
    stream(server, cid)


def test_cancel_in_the_middle_of_a_model_stream(servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama) -> None:
    server = launch(servers, tmp_path, ollama, TOOLS_BACKEND="none")
    ollama.add({"text": "word " * 300, "token_delay": 0.05})
    cid = server.post("/api/chat", {"message": "talk"}).json()["conversation"]
    with httpx.stream("GET", f"{server.url}/api/chat", params={"conversation": cid}, timeout=30) as r:
        events = sse_events(r)
        for _, name, _ in events:
            if name == "token":
                break
        t0 = time.monotonic()
        assert server.post("/api/chat/cancel", {"conversation": cid}).status_code == 200
        rest = list(events)
    assert time.monotonic() - t0 < 5  # the stream had 15 s left: it was stopped, not finished
    assert rest[-1][1:] == ("end", {"conversation": cid, "status": "cancelled"})
    detail = server.get(f"/api/conversations/{cid}").json()
    assert detail["conversation"]["status"] == "cancelled" and detail["resumable"] is True


def test_cancel_in_the_middle_of_a_slow_tool_call(servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama) -> None:
    book = tmp_path / "ledger.jsonl"
    config_dir(tmp_path, {"ledger": ledger_server_entry(book)})
    server = launch(servers, tmp_path, ollama)
    ollama.add({"tool_calls": [("ledger__append", {"label": "slow", "delay": 30})]}, {"text": "next turn ok"})
    cid = server.post("/api/chat", {"message": "slow tool"}).json()["conversation"]
    wait_until(lambda: any(e["event"] == "start" for e in ledger(book)))
    t0 = time.monotonic()
    assert server.post("/api/chat/cancel", {"conversation": cid}).json()["status"] == "cancelled"
    assert time.monotonic() - t0 < 10  # the call had 30 s left: not waited for
    assert not any(e["event"] == "done" for e in ledger(book))
    # the dangling call does not break the next turn
    assert server.post("/api/chat", {"message": "never mind", "conversation": cid}).status_code == 200
    assert stream(server, cid)[-1][2]["status"] == "completed"
    messages = server.get(f"/api/conversations/{cid}").json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert messages[2]["status"] == "error"


def test_sigterm_drains_refuses_new_runs_and_interrupts_what_is_left(
    servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama
) -> None:
    server = launch(servers, tmp_path, ollama, TOOLS_BACKEND="none", SHUTDOWN_TIMEOUT="2")
    done = server.post("/api/chat", {"message": "first"}).json()["conversation"]
    stream(server, done)
    ollama.add({"text": "word " * 400, "token_delay": 0.05})
    cid = server.post("/api/chat", {"message": "long"}).json()["conversation"]
    with httpx.stream("GET", f"{server.url}/api/chat", params={"conversation": cid}, timeout=30) as r:
        events = sse_events(r)
        next(e for e in events if e[1] == "token")
        t0 = time.monotonic()
        server.signal(signal.SIGTERM)
        time.sleep(0.3)
        refused = server.post("/api/chat", {"message": "during drain", "conversation": done})
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "SHUTTING_DOWN"
        rest = list(events)
    assert rest[-1][1:] == ("end", {"conversation": cid, "status": "interrupted"})
    server.wait(10)
    assert time.monotonic() - t0 < 2 + 5
    ollama.add({"text": "resumed fine"})
    again = launch(servers, tmp_path, ollama, TOOLS_BACKEND="none")
    detail = again.get(f"/api/conversations/{cid}").json()
    assert detail["conversation"]["status"] == "interrupted" and detail["resumable"] is True
    assert detail["conversation"].get("error") is None  # a shutdown is not a failure
    assert again.post("/api/chat", {"resume": True, "conversation": cid}).status_code == 200
    assert stream(again, cid)[-1][2]["status"] == "completed"
    assert again.get(f"/api/conversations/{cid}").json()["messages"][-1]["content"] == "resumed fine"


def test_sigterm_lets_a_short_run_finish(servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama) -> None:
    server = launch(servers, tmp_path, ollama, TOOLS_BACKEND="none", SHUTDOWN_TIMEOUT="10")
    ollama.add({"text": "a b c d e", "token_delay": 0.2})
    cid = server.post("/api/chat", {"message": "short"}).json()["conversation"]
    time.sleep(0.3)
    server.signal(signal.SIGTERM)
    server.wait(15)
    again = launch(servers, tmp_path, ollama, TOOLS_BACKEND="none")
    assert again.get(f"/api/conversations/{cid}").json()["conversation"]["status"] == "completed"


def test_no_mcp_server_process_outlives_the_server(servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama) -> None:
    book = tmp_path / "ledger.jsonl"
    config_dir(tmp_path, {"ledger": ledger_server_entry(book)})
    server = launch(servers, tmp_path, ollama)
    ollama.add({"tool_calls": [("ledger__append", {"label": "x"})]}, {"text": "ok"})
    cid = server.post("/api/chat", {"message": "tool"}).json()["conversation"]
    stream(server, cid)
    pids = {e["pid"] for e in ledger(book)}
    assert len(pids) == 1
    (pid,) = pids
    os.kill(pid, 0)  # alive while the server runs
    server.signal(signal.SIGTERM)
    server.wait(15)

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")

    wait_until(gone, 5)


def test_two_servers_on_one_file_never_run_one_conversation_twice(
    servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama
) -> None:
    a = launch(servers, tmp_path, ollama, TOOLS_BACKEND="none")
    b = launch(servers, tmp_path, ollama, TOOLS_BACKEND="none")
    cid = a.post("/api/chat", {"message": "first"}).json()["conversation"]
    stream(a, cid)
    ollama.add({"text": "slow " * 40, "token_delay": 0.05})
    assert a.post("/api/chat", {"message": "on a", "conversation": cid}).status_code == 200
    other = b.post("/api/chat", {"message": "on b", "conversation": cid})
    assert other.status_code == 409 and other.json()["error"]["code"] == "SESSION_IN_PROGRESS"
    assert b.get(f"/api/conversations/{cid}").json()["resumable"] is False
    stream(a, cid)
    assert b.post("/api/chat", {"message": "now b", "conversation": cid}).status_code == 200
    assert stream(b, cid)[-1][2]["status"] == "completed"


def test_the_cli_can_drive_a_running_server(servers: list[LiveServer], tmp_path: Path, ollama: FakeOllama) -> None:
    import subprocess

    from tests.support.app import SOPHOS

    server = launch(servers, tmp_path, ollama, TOOLS_BACKEND="none")
    ollama.add({"text": "over the wire"}, {"text": "second turn"})
    env = {**server.env, "DATABASE_PATH": str(tmp_path / "elsewhere.db")}  # the client never opens the file
    run = subprocess.run([SOPHOS, "chat", "--server", server.url, "hello"], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "over the wire" in run.stdout
    cid = run.stderr.split("conversation: ")[1].split()[0]
    again = subprocess.run(
        [SOPHOS, "chat", "--server", server.url, "-c", cid, "more"], env=env, capture_output=True, text=True, timeout=60
    )
    assert "second turn" in again.stdout
    refused = subprocess.run([SOPHOS, "resume", "--server", server.url, cid], env=env, capture_output=True, text=True, timeout=60)
    assert (
        refused.returncode == 4 and refused.stderr.strip() == "error: RUN_NOT_RESUMABLE: Nothing to resume: the last run finished"
    )
    assert not (tmp_path / "elsewhere.db").exists()
