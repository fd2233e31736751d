"""StoragePort on the SQLite file: stats, retention (prune) and VACUUM."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from adapters.sqlite.database import connect, storage_failure
from adapters.sqlite.message_rows import collect
from domain.errors import InvalidInput
from ports.storage import StoragePort, StorageStats, ThreadUsage

NEWEST_FIRST = "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id DESC"
OLDER_THAN_KEPT = f"{NEWEST_FIRST} LIMIT -1 OFFSET ?"


def prune_thread(cur: sqlite3.Cursor, thread_id: str, ns: str, keep: int, adding: bytes | None = None) -> int:
    """Delete a thread's checkpoints older than its latest `keep`, their writes, and the
    message rows only they referred to (`adding`: the message digests of a checkpoint
    about to be inserted, which keeps its rows)."""
    ids = [r[0] for r in cur.execute(NEWEST_FIRST, (thread_id, ns)).fetchall()]
    if len(ids) <= keep:
        return 0
    collect(cur, thread_id, ns, ids[keep:], ids[:keep], adding)
    args = (thread_id, ns, thread_id, ns, keep)
    cur.execute(f"DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id IN ({OLDER_THAN_KEPT})", args)
    cur.execute(
        f"DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id IN ({OLDER_THAN_KEPT})", args
    )
    return cur.rowcount


def _count(conn: sqlite3.Connection, table: str) -> int:
    try:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    except sqlite3.OperationalError:  # the checkpointer has not created its tables yet
        return 0


@contextmanager
def _connection(path: str) -> Iterator[sqlite3.Connection]:
    """A connection closed after use; sqlite3 errors leave as StorageFailure."""
    try:
        conn = connect(path)
        try:
            yield conn
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise storage_failure(e) from e


class SqliteMaintenance(StoragePort):
    def __init__(self, path: str) -> None:
        self.path = path

    def _size(self) -> int:
        return sum(os.path.getsize(p) for p in (self.path, f"{self.path}-wal") if os.path.exists(p))

    def stats(self, top: int = 5) -> StorageStats:
        with _connection(self.path) as conn:
            page = conn.execute("PRAGMA page_size").fetchone()[0]
            free = conn.execute("PRAGMA freelist_count").fetchone()[0] * page
            largest: list[ThreadUsage] = []
            if _count(conn, "checkpoints"):
                rows = conn.execute(
                    "SELECT thread_id, count(*), sum(length(checkpoint) + length(metadata)) + coalesce((SELECT "
                    "sum(length(message)) FROM checkpoint_messages m WHERE m.thread_id = c.thread_id), 0) "
                    "FROM checkpoints c GROUP BY thread_id ORDER BY 3 DESC LIMIT ?",
                    (top,),
                ).fetchall()
                largest = [ThreadUsage(t, n, b or 0) for t, n, b in rows]
            return StorageStats(
                path=self.path,
                file_bytes=self._size(),
                conversations=_count(conn, "conversations"),
                runs=_count(conn, "runs"),
                checkpoints=_count(conn, "checkpoints"),
                writes=_count(conn, "writes"),
                logged_checkpoints=_count(conn, "checkpoint_log"),
                free_bytes=free,
                largest=largest,
            )

    def prune(self, keep: int) -> int:
        if keep < 1:
            raise InvalidInput("keep must be at least 1: a resume needs the latest checkpoint")
        with _connection(self.path) as conn:
            if not _count(conn, "checkpoints"):
                return 0
            conn.execute("BEGIN IMMEDIATE")
            cur = conn.cursor()
            deleted = 0
            for thread_id, ns in cur.execute("SELECT DISTINCT thread_id, checkpoint_ns FROM checkpoints").fetchall():
                deleted += prune_thread(cur, thread_id, ns, keep)
            conn.execute("COMMIT")
            return deleted

    def vacuum(self) -> tuple[int, int]:
        before = self._size()
        with _connection(self.path) as conn:
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return before, self._size()
