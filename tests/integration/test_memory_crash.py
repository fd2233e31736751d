"""kill -9 during a memory write (issue 45 item 2): a `memory__remember` call is a tool call
like any other, journaled before it is sent; run again on resume, it writes the same memory
(its id comes from the call's idempotency key), so the memory holds the item once."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_crash_resume import ledger, saved_tool_results, wait_for
from tests.integration.test_memory import SHIPPED_MEMORY
from tests.support.app import SOPHOS, app_env, config_dir, ledger_server_entry, process_env
from tests.support.fake_ollama import fake_ollama


def memories(db: Path) -> list[tuple[str, str]]:
    if not db.exists():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return [(k, json.loads(v)["text"]) for k, v in conn.execute("SELECT key, value FROM store_items")]
    except sqlite3.OperationalError:  # not migrated yet
        return []
    finally:
        conn.close()


@pytest.mark.slow
def test_a_memory_write_cut_by_sigkill_is_in_the_memory_once_after_resume(tmp_path: Path) -> None:
    book = tmp_path / "ledger.jsonl"
    config_dir(tmp_path, {"memory": SHIPPED_MEMORY, "ledger": ledger_server_entry(book)})
    calls = [("memory__remember", {"text": "the user's cat is called Miso"}), ("ledger__append", {"label": "c", "delay": 5})]
    with fake_ollama([{"tool_calls": calls}, {"text": "Remembered, and noted."}]) as fake:
        env = process_env(app_env(tmp_path, fake.url, TOOL_APPROVAL="unsafe"))
        db = Path(env["DATABASE_PATH"])
        child = subprocess.Popen(
            [SOPHOS, "chat", "remember my cat"], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            # the memory is written and its result saved, the ledger's call is in flight
            wait_for(lambda: len(memories(db)) == 1 and saved_tool_results(db) == 1)
            assert not any(e["event"] == "done" for e in ledger(book))
            child.send_signal(signal.SIGKILL)
        finally:
            child.wait(10)
        assert child.returncode == -signal.SIGKILL
        # as if the kill had come between the memory's commit and its result's (a window a
        # test cannot hit at will): the call's saved writes are taken away, so the resume
        # finds it started (journaled) and not finished, and must run it again
        conn = sqlite3.connect(db)
        with conn:
            taken = conn.execute(
                "DELETE FROM writes WHERE task_id IN "
                "(SELECT task_id FROM writes WHERE instr(value, CAST('Remembered' AS BLOB)) > 0)"
            ).rowcount
        assert taken >= 1 and saved_tool_results(db) == 0
        (cid,) = conn.execute("SELECT id FROM conversations").fetchone()
        (journaled,) = conn.execute("SELECT attempts FROM tool_calls WHERE tool = 'memory__remember'").fetchone()
        conn.close()
        assert journaled == 1

        resumed = subprocess.run([SOPHOS, "resume", cid], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert resumed.returncode == 0, resumed.stderr
        assert "Remembered, and noted." in resumed.stdout
        results = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool"]
        assert len(results) == 2 and results[0].startswith("Remembered (id m_"), fake.requests[-1]

    conn = sqlite3.connect(db)
    (attempts,) = conn.execute("SELECT attempts FROM tool_calls WHERE tool = 'memory__remember'").fetchone()
    conn.close()
    assert attempts == 2  # it did run again
    assert [text for _, text in memories(db)] == ["the user's cat is called Miso"]  # once
    listed = subprocess.run(
        [SOPHOS, "memory", "list", "--json"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert [m["text"] for m in json.loads(listed.stdout)["memories"]] == ["the user's cat is called Miso"]
