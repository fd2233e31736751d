"""A real process killed with SIGKILL in the middle of a tools step, resumed by another."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.app import SOPHOS, app_env, config_dir, ledger_server_entry, process_env
from tests.support.fake_ollama import fake_ollama


def ledger(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def saved_tool_results(db: Path) -> int:
    """Tool results saved as pending writes on the latest checkpoint (finished tasks)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        row = conn.execute("SELECT checkpoint_id FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1").fetchone()
        if row is None:
            return 0
        (n,) = conn.execute("SELECT count(*) FROM writes WHERE checkpoint_id = ? AND channel = 'messages'", row).fetchone()
        return int(n)
    finally:
        conn.close()


def wait_for(predicate: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


@pytest.mark.slow
def test_resume_after_sigkill_does_not_repeat_a_finished_tool_call_and_keeps_the_chosen_model(tmp_path: Path) -> None:
    book = tmp_path / "ledger.jsonl"
    config_dir(tmp_path, {"ledger": ledger_server_entry(book)})
    calls = [
        ("ledger__append", {"label": "a"}),
        ("ledger__append", {"label": "b", "delay": 0.2}),
        ("ledger__append", {"label": "c", "delay": 3}),
    ]
    replies = [{"tool_calls": calls}, {"text": "All three done."}]
    with fake_ollama(replies, models=("qwen3:latest", "clerk:latest")) as fake:
        env = process_env(app_env(tmp_path, fake.url))
        db = Path(env["DATABASE_PATH"])
        # the run's choice (model, system prompt) is the conversation's: the resume in another
        # process must send the same, though no checkpoint holds it
        chat = [SOPHOS, "chat", "-m", "clerk", "-s", "You keep the ledger.", "do three things"]
        child = subprocess.Popen(chat, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_for(lambda: {e["label"] for e in ledger(book) if e["event"] == "done"} == {"a", "b"})
            wait_for(lambda: db.exists() and saved_tool_results(db) == 2)
            assert not any(e["label"] == "c" and e["event"] == "done" for e in ledger(book))
            child.send_signal(signal.SIGKILL)
        finally:
            child.wait(10)
        assert child.returncode == -signal.SIGKILL
        (cid,) = sqlite3.connect(db).execute("SELECT id FROM conversations").fetchone()

        shown = subprocess.run([SOPHOS, "show", cid, "--json"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        detail = json.loads(shown.stdout)
        assert detail["resumable"] is True and detail["conversation"]["status"] == "interrupted"

        resumed = subprocess.run([SOPHOS, "resume", cid], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert resumed.returncode == 0, resumed.stderr
        assert "All three done." in resumed.stdout
        assert len(fake.requests) == 2
        assert [r["model"] for r in fake.requests] == ["clerk", "clerk"]
        assert [r["messages"][0] for r in fake.requests] == [
            {"role": "system", "content": "You are a test.\n\nYou keep the ledger."}
        ] * 2

    entries = ledger(book)
    starts = {label: [e for e in entries if e["label"] == label and e["event"] == "start"] for label in "abc"}
    assert len(starts["a"]) == 1 and len(starts["b"]) == 1  # finished before the kill: never again
    assert len(starts["c"]) == 2  # in flight at the kill: run again...
    assert starts["c"][0]["key"] == starts["c"][1]["key"] == f"{cid}:" + starts["c"][0]["key"].split(":", 1)[1]
    assert len([e for e in entries if e["label"] == "c" and e["event"] == "done"]) == 1

    shown = subprocess.run([SOPHOS, "show", cid, "--json"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    detail = json.loads(shown.stdout)
    roles = [m["role"] for m in detail["messages"]]
    assert roles == ["user", "assistant", "tool", "tool", "tool", "assistant"]
    assert detail["conversation"]["status"] == "completed" and not detail["resumable"]
    call_ids = {c["id"] for c in detail["messages"][1]["toolCalls"]}
    assert {m["toolCallId"] for m in detail["messages"] if m["role"] == "tool"} == call_ids


@pytest.mark.slow
def test_editing_away_from_a_killed_tools_step_keeps_its_finished_calls_on_the_branch_left(tmp_path: Path) -> None:
    book = tmp_path / "ledger.jsonl"
    config_dir(tmp_path, {"ledger": ledger_server_entry(book)})
    calls = [("ledger__append", {"label": "a"}), ("ledger__append", {"label": "c", "delay": 5})]
    with fake_ollama([{"tool_calls": calls}, {"text": "Edited answer."}]) as fake:
        env = process_env(app_env(tmp_path, fake.url))
        db = Path(env["DATABASE_PATH"])
        child = subprocess.Popen(
            [SOPHOS, "chat", "do two things"], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            wait_for(lambda: {e["label"] for e in ledger(book) if e["event"] == "done"} == {"a"})
            wait_for(lambda: saved_tool_results(db) == 1)  # a is saved, c is in flight
            child.send_signal(signal.SIGKILL)
        finally:
            child.wait(10)
        (cid,) = sqlite3.connect(db).execute("SELECT id FROM conversations").fetchone()

        def sophos(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([SOPHOS, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)

        edited = sophos("chat", "-c", cid, "--edit", "0", "do nothing")
        assert edited.returncode == 0 and "Edited answer." in edited.stdout, edited.stderr
        assert sophos("branch", cid, "1").returncode == 0
        detail = json.loads(sophos("show", cid, "--json").stdout)
    results = {m["toolCallId"]: m for m in detail["messages"] if m["role"] == "tool"}
    by_label = {c["args"]["label"]: c["id"] for c in detail["messages"][1]["toolCalls"]}
    assert results[by_label["a"]]["content"] == "appended a" and results[by_label["a"]]["status"] == "success"
    assert results[by_label["c"]]["status"] == "error" and "moved to another branch" in results[by_label["c"]]["content"]
    assert detail["resumable"] is False and detail["messages"][0]["branch"] == {"index": 1, "count": 2, "branches": [1, 2]}
