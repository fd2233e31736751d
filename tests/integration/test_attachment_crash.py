"""A real `sophos serve` killed with SIGKILL while it takes a message with a large file:
after a restart, the message and its file are both there or neither is (a file is never
stored without a message that carries it, nor a message without its file), and a message
acknowledged before the kill is always there with its file."""

from __future__ import annotations

import base64
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from domain.attachments import digest_of
from tests.support.app import app_env
from tests.support.fake_ollama import fake_ollama
from tests.support.server import LiveServer

# of the time a message with its file takes to be acknowledged; None: once it is (then killed mid-answer)
SHARES: tuple[float | None, ...] = (0.1, 0.3, 0.5, 0.7, 0.85, 1.0, 1.2, 0.6, None)


def big_file(i: int) -> bytes:
    """About 6 MB of text, different each time (so each turn stores a new file)."""
    return (f"file {i}: " + "the quick brown fox jumps over the lazy dog\n" * 140_000).encode()


def post_in_background(server: LiveServer, body: dict[str, Any]) -> tuple[threading.Thread, list[httpx.Response | None]]:
    answer: list[httpx.Response | None] = [None]

    def send() -> None:
        try:
            answer[0] = httpx.post(f"{server.url}/api/chat", json=body, timeout=60)
        except httpx.HTTPError:
            answer[0] = None

    thread = threading.Thread(target=send)
    thread.start()
    return thread, answer


def stored_state(db: Path, digests: set[str]) -> tuple[set[tuple[str, str]], set[str], set[tuple[str, str]]]:
    """The files' references and rows, and which threads store a message naming each file:
    in the thread's head checkpoint (LangGraph's input checkpoint holds a new message in its
    own channel until the first step applies it), a pending write, or a message row. An
    input checkpoint a later one settled (its run was killed before the input was applied,
    so the message was never acknowledged, and the next turn dropped it with its files)
    stays in the history, but no reader reaches its input any more."""
    with sqlite3.connect(db, isolation_level=None) as conn:
        conn.execute("BEGIN")  # one snapshot: the restarted server may be resuming a run meanwhile
        refs = set(conn.execute("SELECT conversation_id, digest FROM attachment_refs").fetchall())
        blobs = {r[0] for r in conn.execute("SELECT digest FROM attachment_blobs")}
        named: set[tuple[str, str]] = set()
        head = (
            "SELECT DISTINCT thread_id FROM checkpoints c WHERE checkpoint_ns = '' AND checkpoint_id = "
            "(SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = c.thread_id AND checkpoint_ns = '') "
            "AND instr(checkpoint, ?) > 0"
        )
        for digest in digests:
            for sql in (
                head,
                "SELECT DISTINCT thread_id FROM writes WHERE instr(value, ?) > 0",
                "SELECT DISTINCT thread_id FROM checkpoint_messages WHERE instr(message, ?) > 0",
            ):
                named |= {(r[0], digest) for r in conn.execute(sql, (digest.encode(),))}
        conn.execute("COMMIT")
    return refs, blobs, named


def test_a_kill_during_a_turn_with_a_file_leaves_both_the_message_and_the_file_or_neither(tmp_path: Path) -> None:
    with fake_ollama() as ollama:
        ollama.latency = 0.0
        env = app_env(tmp_path, ollama.url, TOOLS_BACKEND="none")
        servers = [LiveServer(env, tmp_path).start()]
        try:
            outcomes = kill_during_turns(servers, env, tmp_path)
        finally:
            servers[-1].stop()  # a failed check leaves no server behind
    assert outcomes[-1] == "both"  # acknowledged, then killed


def kill_during_turns(servers: list[LiveServer], env: dict[str, str], tmp_path: Path) -> list[str]:
    """Each turn killed at its share of the acknowledgement time, checked after a restart;
    `servers[-1]` is the live one."""
    db = tmp_path / "db" / "sophos.db"
    server = servers[-1]
    # how long taking such a message takes, acknowledged (its file and message committed)
    began = time.monotonic()
    first = server.post(
        "/api/chat",
        {
            "message": "warm up",
            "attachments": [{"name": "f.txt", "type": "text/plain", "data": base64.b64encode(big_file(-1)).decode()}],
        },
    )
    assert first.status_code == 200, first.text
    took = time.monotonic() - began
    cid = first.json()["conversation"]
    outcomes: list[str] = []
    sent = {digest_of(big_file(-1))}
    for i, share in enumerate(SHARES):
        data = big_file(i)
        # new conversations (the input checkpoint's write) and a continued one (pending input)
        body: dict[str, Any] = {
            "message": f"turn {i}",
            "attachments": [{"name": f"log-{i}.txt", "type": "text/plain", "data": base64.b64encode(data).decode()}],
        }
        if i % 2:
            body["conversation"] = cid
        thread, answer = post_in_background(server, body)
        if share is None:
            thread.join(60)
        else:
            time.sleep(took * share)
        server.kill()
        thread.join(60)
        server = LiveServer(env, tmp_path).start()
        servers.append(server)
        acknowledged = answer[0] is not None and answer[0].status_code == 200
        sent.add(digest_of(data))
        refs, blobs, named = stored_state(db, sent)
        # a file is stored exactly where a stored message names it, and nowhere else
        assert refs == named, (share, "files without a message:", refs - named, "messages without a file:", named - refs)
        assert blobs == {d for _, d in refs}
        for conv in server.get("/api/conversations").json()["conversations"]:
            for m in server.get(f"/api/conversations/{conv['id']}").json()["messages"]:
                for a in m.get("attachments", []):
                    assert server.get(f"/api/conversations/{conv['id']}/attachments/{a['digest']}").status_code == 200
        here = digest_of(data) in blobs
        assert here or not acknowledged, "a message acknowledged before the kill was lost"
        outcomes.append("both" if here else "neither")
    return outcomes
