"""The SQLite side of messages stored once (the format: adapters.storage.message_refs):
the rows of `checkpoint_messages`, written, read and collected with the checkpoint's cursor.

A checkpoint holds the whole thread and a turn writes three, so SqliteSaver stored every
message three times a turn, again and again: at turn 200 a turn wrote 944 KiB to the file
(238 KiB at turn 2), and the writer's CPU grew with it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from adapters.langgraph import rows
from adapters.storage.message_refs import REFS_TYPE, Plan, Row, garbage, refs_in


def stored_rows(cur: sqlite3.Cursor, thread_id: str, ns: str) -> dict[bytes, bytes]:
    sql = "SELECT digest, message FROM checkpoint_messages WHERE thread_id = ? AND checkpoint_ns = ?"
    return dict(cur.execute(sql, (thread_id, ns)).fetchall())


def insert(cur: sqlite3.Cursor, thread_id: str, ns: str, rows: Iterable[Row]) -> int:
    """Store the rows not stored yet; returns the bytes offered."""
    values = [(thread_id, ns, d, packed) for d, packed in rows]
    cur.executemany(
        "INSERT OR IGNORE INTO checkpoint_messages (thread_id, checkpoint_ns, digest, message) VALUES (?, ?, ?, ?)",
        values,
    )
    return sum(len(v[3]) for v in values)


def has_checkpoint(cur: sqlite3.Cursor, thread_id: str, ns: str, checkpoint_id: str) -> bool:
    sql = "SELECT 1 FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
    return cur.execute(sql, (thread_id, ns, checkpoint_id)).fetchone() is not None


def _refs_of(cur: sqlite3.Cursor, thread_id: str, ns: str, ids: Iterable[str]) -> list[bytes]:
    sql = (
        "SELECT checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? "
        f"AND type = '{REFS_TYPE}'"
    )
    out = []
    for checkpoint_id in ids:
        row = cur.execute(sql, (thread_id, ns, checkpoint_id)).fetchone()
        refs = refs_in(row[0]) if row else None
        if refs is not None:
            out.append(refs)
    return out


def collect(cur: sqlite3.Cursor, thread_id: str, ns: str, pruned: list[str], kept: list[str], adding: bytes | None) -> int:
    """Before the checkpoints `pruned` are deleted: delete the message rows only they
    refer to, given the checkpoints `kept` and the digests of one being added. Returns how many."""
    dropped = garbage(_refs_of(cur, thread_id, ns, pruned), adding, lambda: _refs_of(cur, thread_id, ns, kept))
    cur.executemany(
        "DELETE FROM checkpoint_messages WHERE thread_id = ? AND checkpoint_ns = ? AND digest = ?",
        [(thread_id, ns, d) for d in dropped],
    )
    return len(dropped)


def store(cur: sqlite3.Cursor, thread_id: str, ns: str, planned: Plan) -> int:
    """In the checkpoint's transaction, after pruning: its rows not stored yet."""
    base_stored = planned.base is not None and has_checkpoint(cur, thread_id, ns, planned.base)
    return insert(cur, thread_id, ns, planned.rows(base_stored))


def read_plain(cur: sqlite3.Cursor, thread_id: str, type_: str, blob: bytes) -> dict[str, Any] | None:
    """A stored checkpoint of the thread's main graph as plain dicts (rows.read_plain), its
    message rows read with `cur` (in the read transaction that read the blob)."""
    return rows.read_plain(type_, blob, lambda _refs: stored_rows(cur, thread_id, ""))
