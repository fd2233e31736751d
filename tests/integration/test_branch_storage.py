"""Retention with branches: the thread keeps its last checkpoints only, and every branch's
head survives as a delta that rebuilds exactly the messages it had."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.support.branchy import branchy_thread, long_thread_harness


async def test_retention_keeps_every_branch_head_and_prunes_the_rest(tmp_path: Path) -> None:
    db = tmp_path / "sophos.db"
    run = await branchy_thread(db, turns=24, branches=6)
    assert len(run.left) == 6
    conn = sqlite3.connect(db)
    try:
        (kept,) = conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = ?", (run.cid,)).fetchone()
        (logged,) = conn.execute("SELECT count(*) FROM checkpoint_log WHERE thread_id = ?", (run.cid,)).fetchone()
        rows = conn.execute(
            "SELECT number, active, messages IS NULL FROM branches WHERE conversation_id = ? ORDER BY number", (run.cid,)
        ).fetchall()
    finally:
        conn.close()
    assert kept == 3 and logged > 100  # pruned to the last 3; the log keeps every one
    assert [(n, bool(a), bool(empty)) for n, a, empty in rows] == [(n, n == 7, n == 7) for n in range(1, 8)]
    h, saver, repo = long_thread_harness(db, 0)
    try:
        for number, messages in run.left.items():
            # read without switching (the LangGraph API's history), then restored by the switch
            assert tuple(await h.conversations.branch_messages(run.cid, number)) == messages
            detail = await h.conversations.switch_branch(run.cid, number)
            assert detail.messages == messages and detail.active_branch == number
            assert detail.markers  # a branch with siblings says so
    finally:
        saver.close()
        repo.close()
