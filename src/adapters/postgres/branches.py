"""Branches on PostgreSQL: the `branches` table (migration 2), written by the saver in the
transaction of the checkpoint that forks or switches (see adapters/langgraph/branching.py,
and adapters/sqlite/branches.py for the same rules on SQLite)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from psycopg import AsyncCursor

from adapters.langgraph.branching import IMPORT_COLUMNS, pack, stamp
from adapters.postgres import message_rows
from domain.branches import Branch, fork_parent
from domain.errors import BranchNotFound, SessionInProgress

COLUMNS = "number, parent, fork_index, message_count, active, created_at, updated_at"
LATEST = (
    "SELECT l.checkpoint_id, l.created_at, b.type, b.blob FROM checkpoint_log l "
    "JOIN checkpoints c ON c.thread_id = l.thread_id AND c.checkpoint_ns = l.checkpoint_ns "
    "AND c.checkpoint_id = l.checkpoint_id "
    "LEFT JOIN checkpoint_blobs b ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns "
    "AND b.channel = 'messages' AND b.version = c.checkpoint -> 'channel_versions' ->> 'messages' "
    "WHERE l.thread_id = %s AND l.checkpoint_ns = '' ORDER BY l.checkpoint_id DESC LIMIT 1"
)

Fields = list[dict[str, Any]]
Cursor = AsyncCursor[Any]


def _branch(row: Sequence[Any]) -> Branch:
    number, parent, fork, count, active, created, updated = row
    return Branch(int(number), None if parent is None else int(parent), int(fork), int(count), bool(active), created, updated)


async def load(cur: Cursor, thread_id: str) -> list[Branch]:
    await cur.execute(f"SELECT {COLUMNS} FROM branches WHERE conversation_id = %s ORDER BY number", (thread_id,))
    return [_branch(r) for r in await cur.fetchall()]


async def deltas(cur: Cursor, thread_id: str) -> dict[int, bytes | None]:
    await cur.execute("SELECT number, messages FROM branches WHERE conversation_id = %s", (thread_id,))
    return {int(n): bytes(blob) if blob is not None else None for n, blob in await cur.fetchall()}


async def active_number(cur: Cursor, thread_id: str) -> int | None:
    await cur.execute("SELECT number FROM branches WHERE conversation_id = %s AND active", (thread_id,))
    row = await cur.fetchone()
    return int(row[0]) if row else None


async def latest(cur: Cursor, thread_id: str) -> tuple[Sequence[Any] | None, Fields]:
    await cur.execute(LATEST, (thread_id,))
    head = await cur.fetchone()
    if head is None:
        return head, []
    return head, await message_rows.plain_fields(cur, thread_id, head[2], head[3]) or []


async def stashed_next(cur: Cursor, thread_id: str, number: int) -> list[str]:
    await cur.execute("SELECT next FROM branches WHERE conversation_id = %s AND number = %s", (thread_id, number))
    row = await cur.fetchone()
    return list(json.loads(row[0])) if row else []


async def apply(cur: Cursor, thread_id: str, op: dict[str, Any], checkpoint: dict[str, Any], count: int) -> None:
    """As adapters.sqlite.branches.apply: before the checkpoint that makes it is inserted."""
    now = stamp(checkpoint["ts"])
    branches = await load(cur, thread_id)
    if not branches:
        await cur.execute(
            "INSERT INTO branches (conversation_id, number, parent, fork_index, active, created_at, updated_at) "
            "VALUES (%s, 1, NULL, 0, TRUE, %s, %s)",
            (thread_id, now, now),
        )
        branches = await load(cur, thread_id)
    active = next(b for b in branches if b.active)
    head, fields = await latest(cur, thread_id)
    if op["op"] == "switch":
        target = next((b for b in branches if b.number == op["to"]), None)
        if target is None:
            raise BranchNotFound()
        await cur.execute("SELECT 1 FROM runs WHERE conversation_id = %s AND status = 'running'", (thread_id,))
        if await cur.fetchone():
            raise SessionInProgress()
        await _stash(cur, thread_id, active, head, fields, op.get("next") or [])
        await cur.execute(
            "UPDATE branches SET active = TRUE, messages = NULL, head = %s, message_count = %s "
            "WHERE conversation_id = %s AND number = %s",
            (checkpoint["id"], count, thread_id, target.number),
        )
        await cur.execute(
            "UPDATE conversations SET message_count = %s, updated_at = %s WHERE id = %s", (count, target.updated_at, thread_id)
        )
        return
    at = int(op["at"])
    if at >= len(fields):
        await cur.execute(
            "UPDATE branches SET head = %s, updated_at = %s WHERE conversation_id = %s AND number = %s",
            (checkpoint["id"], now, thread_id, active.number),
        )
        return
    await _stash(cur, thread_id, active, head, fields, op.get("next") or [])
    parent = fork_parent(branches, active.number, at)
    await cur.execute(
        "INSERT INTO branches (conversation_id, number, parent, fork_index, active, head, message_count, "
        "created_at, updated_at) VALUES (%s, %s, %s, %s, TRUE, %s, %s, %s, %s)",
        (thread_id, max(b.number for b in branches) + 1, parent, at, checkpoint["id"], count, now, now),
    )


async def _stash(
    cur: Cursor, thread_id: str, branch: Branch, head: Sequence[Any] | None, fields: Fields, next_nodes: Sequence[str]
) -> None:
    head_id, updated = (head[0], stamp(head[1])) if head else (None, branch.updated_at)
    await cur.execute(
        "UPDATE branches SET active = FALSE, head = %s, next = %s, message_count = %s, messages = %s, updated_at = %s "
        "WHERE conversation_id = %s AND number = %s",
        (head_id, json.dumps(list(next_nodes)), len(fields), pack(fields[branch.fork :]), updated, thread_id, branch.number),
    )


async def insert(cur: Cursor, rows: Sequence[Sequence[Any]]) -> None:
    """The rows of an imported thread's branches (adapters.langgraph.branching.imported)."""
    await cur.executemany(f"INSERT INTO branches ({IMPORT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)", rows)
