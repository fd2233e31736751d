"""Storage stays linear in a conversation's length (a test of size, not of time)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from entrypoints.export import export_text
from tests.support.long_thread import TEXT, file_size, long_thread_harness

TURNS = 300
BOUND = 5 * 1024 * 1024


async def test_a_300_turn_thread_stays_under_five_megabytes_and_grows_linearly(tmp_path: Path) -> None:
    db = tmp_path / "sophos.db"
    h, saver, repo = long_thread_harness(db, TURNS)
    started, _ = await h.send(f"0 {TEXT}")
    cid = started.conversation_id
    sizes = {1: file_size(db)}
    for i in range(1, TURNS):
        await h.send(f"{i} {TEXT}", cid)
        if i + 1 in (10, 20, 290, 300):
            sizes[i + 1] = file_size(db)
    detail = await h.conversations.get(cid)
    assert len(detail.messages) == 4 * TURNS and detail.conversation.message_count == 4 * TURNS
    size = file_size(db)
    assert size < BOUND, f"{size} bytes"
    history = (await export_text(h.conversations, cid, "jsonl"))[1].strip().split("\n")
    # every checkpoint of every run is in the export: a first turn writes five (input, its
    # step, the agent asking for a tool, the tool, the answer), each later one three (its
    # message waits as pending input on the last checkpoint)
    assert len(history) == 5 + (TURNS - 1) * 3
    early, late = (sizes[20] - sizes[10]) / 10, (sizes[300] - sizes[290]) / 10  # bytes per turn
    assert late <= 1.5 * max(early, 4096), (early, late)  # linear, not quadratic (baseline: 27x)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = ?", (cid,)).fetchone()[0] <= 3
    # each message once, in its own row (the checkpoints hold their digests)
    assert conn.execute("SELECT count(*) FROM checkpoint_messages WHERE thread_id = ?", (cid,)).fetchone()[0] == 4 * TURNS
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # each new checkpoint reuses the pages of the one it retires (it held ~128 free pages)
    assert conn.execute("PRAGMA freelist_count").fetchone()[0] <= 16
    saver.close()
    repo.close()
