"""Branches on SQLite: the `branches` table (migration 6), written by the checkpointer in
the transaction of the checkpoint that forks or switches (see adapters/langgraph/branching.py)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from adapters.langgraph.branching import IMPORT_COLUMNS, pack, stamp
from adapters.langgraph.rows import plain_messages
from adapters.sqlite.message_rows import read_plain
from domain.branches import Branch, fork_parent
from domain.errors import BranchNotFound, SessionInProgress

COLUMNS = "number, parent, fork_index, message_count, active, created_at, updated_at"
LATEST = (
    "SELECT l.checkpoint_id, l.created_at, c.type, c.checkpoint FROM checkpoint_log l JOIN checkpoints c "
    "ON c.thread_id = l.thread_id AND c.checkpoint_ns = l.checkpoint_ns AND c.checkpoint_id = l.checkpoint_id "
    "WHERE l.thread_id = ? AND l.checkpoint_ns = '' ORDER BY l.checkpoint_id DESC LIMIT 1"
)

Fields = list[dict[str, Any]]


def _branch(row: Sequence[Any]) -> Branch:
    number, parent, fork, count, active, created, updated = row
    return Branch(int(number), None if parent is None else int(parent), int(fork), int(count), bool(active), created, updated)


def load(cur: sqlite3.Cursor, thread_id: str) -> list[Branch]:
    rows = cur.execute(f"SELECT {COLUMNS} FROM branches WHERE conversation_id = ? ORDER BY number", (thread_id,))
    return [_branch(r) for r in rows.fetchall()]


def deltas(cur: sqlite3.Cursor, thread_id: str) -> dict[int, bytes | None]:
    rows = cur.execute("SELECT number, messages FROM branches WHERE conversation_id = ?", (thread_id,)).fetchall()
    return {int(n): blob for n, blob in rows}


def active_number(cur: sqlite3.Cursor, thread_id: str) -> int | None:
    row = cur.execute("SELECT number FROM branches WHERE conversation_id = ? AND active = 1", (thread_id,)).fetchone()
    return int(row[0]) if row else None


def apply(cur: sqlite3.Cursor, thread_id: str, op: dict[str, Any], checkpoint: dict[str, Any], count: int) -> None:
    """Apply a branch operation, before the checkpoint that makes it is inserted (so the
    thread's latest checkpoint is still the head of the branch being left)."""
    now = stamp(checkpoint["ts"])
    branches = load(cur, thread_id)
    if not branches:  # never forked: the thread so far is branch 1
        cur.execute(
            "INSERT INTO branches (conversation_id, number, parent, fork_index, active, created_at, updated_at) "
            "VALUES (?, 1, NULL, 0, 1, ?, ?)",
            (thread_id, now, now),
        )
        branches = load(cur, thread_id)
    active = next(b for b in branches if b.active)
    if op["op"] == "switch":
        _switch(cur, thread_id, op, checkpoint["id"], count, branches, active)
        return
    at = int(op["at"])
    head = cur.execute(LATEST, (thread_id,)).fetchone()
    fields = fields_of(cur, thread_id, head)
    if at >= len(fields):  # nothing is left behind (a regenerate of an unanswered message)
        cur.execute(
            "UPDATE branches SET head = ?, updated_at = ? WHERE conversation_id = ? AND number = ?",
            (checkpoint["id"], now, thread_id, active.number),
        )
        return
    _stash(cur, thread_id, active, head, fields, op.get("next") or [])
    parent = fork_parent(branches, active.number, at)
    number = max(b.number for b in branches) + 1
    cur.execute(
        "INSERT INTO branches (conversation_id, number, parent, fork_index, active, head, message_count, "
        "created_at, updated_at) VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?)",
        (thread_id, number, parent, at, checkpoint["id"], count, now, now),
    )


def _switch(
    cur: sqlite3.Cursor,
    thread_id: str,
    op: dict[str, Any],
    checkpoint_id: str,
    count: int,
    branches: list[Branch],
    active: Branch,
) -> None:
    target = next((b for b in branches if b.number == op["to"]), None)
    if target is None:
        raise BranchNotFound()
    if cur.execute("SELECT 1 FROM runs WHERE conversation_id = ? AND status = 'running'", (thread_id,)).fetchone():
        raise SessionInProgress()
    head = cur.execute(LATEST, (thread_id,)).fetchone()
    _stash(cur, thread_id, active, head, fields_of(cur, thread_id, head), op.get("next") or [])
    cur.execute(
        "UPDATE branches SET active = 1, messages = NULL, head = ?, message_count = ? WHERE conversation_id = ? AND number = ?",
        (checkpoint_id, count, thread_id, target.number),
    )
    cur.execute("UPDATE conversations SET message_count = ?, updated_at = ? WHERE id = ?", (count, target.updated_at, thread_id))


def fields_of(cur: sqlite3.Cursor, thread_id: str, head: Sequence[Any] | None) -> Fields:
    """The messages of the head row (LATEST) as plain field dicts."""
    return [] if head is None else plain_messages(read_plain(cur, thread_id, head[2], head[3]))


def _stash(
    cur: sqlite3.Cursor, thread_id: str, branch: Branch, head: Sequence[Any] | None, fields: Fields, next_nodes: Sequence[str]
) -> None:
    """Keep the branch being left as a delta: its own messages and what was left to run."""
    head_id, updated = (head[0], stamp(head[1])) if head else (None, branch.updated_at)
    cur.execute(
        "UPDATE branches SET active = 0, head = ?, next = ?, message_count = ?, messages = ?, updated_at = ? "
        "WHERE conversation_id = ? AND number = ?",
        (head_id, json.dumps(list(next_nodes)), len(fields), pack(fields[branch.fork :]), updated, thread_id, branch.number),
    )


def stashed_next(cur: sqlite3.Cursor, thread_id: str, number: int) -> list[str]:
    row = cur.execute("SELECT next FROM branches WHERE conversation_id = ? AND number = ?", (thread_id, number)).fetchone()
    return list(json.loads(row[0])) if row else []


def insert(cur: sqlite3.Cursor, rows: Sequence[Sequence[Any]]) -> None:
    """The rows of an imported thread's branches (adapters.langgraph.branching.imported)."""
    cur.executemany(f"INSERT INTO branches ({IMPORT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
