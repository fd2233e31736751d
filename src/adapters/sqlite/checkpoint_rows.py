"""The SQL of the checkpointer's own tables on SQLite (checkpoints, writes, checkpoint_log),
run with the saver's cursor in the transaction it opened, and the rows of `writes` as
SqliteSaver builds them. The saver (adapters.sqlite.saver) keeps the I/O: its thread, its
transactions and fencing, the latest checkpoint in memory, the metrics."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langgraph.checkpoint.base import WRITES_IDX_MAP

from adapters.langgraph.keys import INPUT_TASK
from adapters.storage.checkpoint_log import HISTORY_COLUMNS
from domain.errors import RunLost

WriteRow = tuple[str, str, str, str, str, int, str, str, bytes]
"""thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value"""


def fence(cur: sqlite3.Cursor, run_id: object) -> None:
    """RunLost unless the run `run_id` is still running (in the write's transaction)."""
    row = cur.execute("SELECT status FROM runs WHERE id = ?", (str(run_id),)).fetchone()
    if row is None or row[0] != "running":
        raise RunLost()


def insert_checkpoint(
    cur: sqlite3.Cursor,
    key: tuple[str, str, str],
    parent_id: str | None,
    type_: str,
    blob: bytes,
    meta_blob: bytes,
    summary: Sequence[Any],
    branch: int | None,
) -> None:
    """The checkpoint `key` (thread, namespace, id) and its line in the checkpoint log
    (`summary`: adapters.langgraph.rows.summary_row)."""
    cur.execute(
        "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
        "parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (*key, parent_id, type_, blob, meta_blob),
    )
    cur.execute(
        "INSERT OR REPLACE INTO checkpoint_log (thread_id, checkpoint_ns, checkpoint_id, created_at, "
        "step, source, next, message_count, last_message, run_id, branch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (*key, *summary, branch),
    )


def write_rows(
    configurable: Mapping[str, Any],
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
    dumps: Callable[[Any], tuple[str, bytes]],
) -> list[WriteRow]:
    """A task's writes as rows of `writes`, each value encoded by `dumps` (as SqliteSaver.put_writes)."""
    return [
        (
            str(configurable["thread_id"]),
            str(configurable["checkpoint_ns"]),
            str(configurable["checkpoint_id"]),
            task_id,
            task_path,
            WRITES_IDX_MAP.get(channel, idx),
            channel,
            *dumps(value),
        )
        for idx, (channel, value) in enumerate(writes)
    ]


def insert_writes(cur: sqlite3.Cursor, writes: Sequence[tuple[str, Any]], rows: Sequence[WriteRow]) -> None:
    """As SqliteSaver.put_writes: the special channels' rows replace, the others are written once."""
    verb = "REPLACE" if all(w[0] in WRITES_IDX_MAP for w in writes) else "IGNORE"
    cur.executemany(
        f"INSERT OR {verb} INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, "
        "idx, channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def latest_id(cur: sqlite3.Cursor, thread_id: str, ns: str) -> str | None:
    row = cur.execute(
        "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT 1",
        (thread_id, ns),
    ).fetchone()
    return None if row is None else str(row[0])


def head_row(cur: sqlite3.Cursor, thread_id: str) -> tuple[Any, ...] | None:
    """The latest line of the thread's log with its pending writes and pending input
    (adapters.storage.checkpoint_log.HEAD_COLUMNS)."""
    return cur.execute(  # type: ignore[no-any-return]
        "SELECT l.checkpoint_id, l.next, l.message_count, l.run_id, (SELECT count(*) FROM writes w "
        "WHERE w.thread_id = l.thread_id AND w.checkpoint_ns = '' AND w.checkpoint_id = l.checkpoint_id), "
        "(SELECT count(*) FROM writes w WHERE w.thread_id = l.thread_id AND w.checkpoint_ns = '' "
        "AND w.checkpoint_id = l.checkpoint_id AND w.task_id = ? AND w.channel = 'messages') "
        "FROM checkpoint_log l WHERE l.thread_id = ? AND l.checkpoint_ns = '' "
        "ORDER BY l.checkpoint_id DESC LIMIT 1",
        (INPUT_TASK, thread_id),
    ).fetchone()


def checkpoint_blob(cur: sqlite3.Cursor, thread_id: str, checkpoint_id: str) -> tuple[str, bytes] | None:
    """The (type, blob) of a checkpoint of the thread's main graph."""
    return cur.execute(  # type: ignore[no-any-return]
        "SELECT type, checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?",
        (thread_id, checkpoint_id),
    ).fetchone()


def history_rows(cur: sqlite3.Cursor, thread_id: str) -> list[tuple[Any, ...]]:
    """The thread's log, oldest first (HISTORY_COLUMNS)."""
    return cur.execute(
        f"SELECT {HISTORY_COLUMNS} FROM checkpoint_log WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id",
        (thread_id,),
    ).fetchall()
