"""StoragePort on PostgreSQL: stats, retention (prune) and VACUUM FULL, for `sophos db`.
Blocking (psycopg's sync API): these are CLI commands, not served requests."""

from __future__ import annotations

from typing import Any

import psycopg

from adapters.postgres.database import connection_options, storage_failure
from adapters.postgres.message_rows import KEPT
from adapters.postgres.saver import RETENTION
from adapters.storage.message_refs import unpack_seqs, unreferenced
from domain.errors import InvalidInput
from ports.storage import StoragePort, StorageStats, ThreadUsage

TABLES = (
    "conversations",
    "runs",
    "run_events",
    "tool_calls",
    "checkpoint_log",
    "processes",
    "checkpoints",
    "checkpoint_blobs",
    "checkpoint_writes",
    "checkpoint_messages",
)

# Bytes of checkpoint data per thread (the checkpoints and the blobs they own), largest first.
LARGEST = (
    "SELECT t.thread_id, t.n, t.b + coalesce((SELECT sum(length(blob)) FROM checkpoint_blobs bl "
    "WHERE bl.thread_id = t.thread_id), 0) + coalesce((SELECT sum(length(message)) FROM checkpoint_messages m "
    "WHERE m.thread_id = t.thread_id), 0) FROM (SELECT thread_id, count(*) AS n, "
    "sum(pg_column_size(checkpoint) + pg_column_size(metadata)) AS b FROM checkpoints GROUP BY thread_id) t "
    "ORDER BY 3 DESC LIMIT %s"
)


class PostgresMaintenance(StoragePort):
    def __init__(self, url: str) -> None:
        self.url = url

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(self.url, **connection_options())
        except psycopg.Error as e:
            raise storage_failure(e) from e

    def _size(self, conn: psycopg.Connection[Any]) -> int:
        return int(_one(conn, "SELECT pg_database_size(current_database())"))

    def stats(self, top: int = 5) -> StorageStats:
        with self._connect() as conn:
            try:
                count = {t: _count(conn, t) for t in TABLES}
                largest = []
                if count["checkpoints"]:
                    rows = conn.execute(LARGEST, (top,)).fetchall()
                    largest = [ThreadUsage(t, n, int(b or 0)) for t, n, b in rows]
                dead = _one(
                    conn,
                    "SELECT coalesce(sum(pg_relation_size(relid) * n_dead_tup / "
                    "greatest(n_live_tup + n_dead_tup, 1)), 0) FROM pg_stat_user_tables",
                )
                return StorageStats(
                    path=_label(self.url),
                    file_bytes=self._size(conn),
                    conversations=count["conversations"],
                    runs=count["runs"],
                    checkpoints=count["checkpoints"],
                    writes=count["checkpoint_writes"],
                    logged_checkpoints=count["checkpoint_log"],
                    free_bytes=int(dead),
                    largest=largest,
                )
            except psycopg.Error as e:
                raise storage_failure(e) from e

    def prune(self, keep: int) -> int:
        if keep < 1:
            raise InvalidInput("keep must be at least 1: a resume needs the latest checkpoint")
        with self._connect() as conn:
            try:
                if not _count(conn, "checkpoints"):
                    return 0
                deleted = 0
                with conn.transaction():
                    threads = conn.execute("SELECT DISTINCT thread_id, checkpoint_ns FROM checkpoints").fetchall()
                    for thread_id, ns in threads:
                        for i, sql in enumerate(RETENTION):
                            cur = conn.execute(sql, {"t": thread_id, "ns": ns, "keep": keep})
                            deleted += cur.rowcount if i == 1 else 0  # the checkpoints themselves
                        _collect(conn, thread_id, ns, [bytes(r[0]) for r in cur.fetchall()])
                return deleted
            except psycopg.Error as e:
                raise storage_failure(e) from e

    def vacuum(self) -> tuple[int, int]:
        """VACUUM FULL: rewrites every table (an exclusive lock on each while it does)."""
        with self._connect() as conn:
            try:
                before = self._size(conn)
                conn.execute("VACUUM FULL")
                return before, self._size(conn)
            except psycopg.Error as e:
                raise storage_failure(e) from e


def _collect(conn: psycopg.Connection[Any], thread_id: str, ns: str, gone: list[bytes]) -> None:
    """The message rows only the deleted blobs `gone` referred to (message_rows.collect)."""
    kept = lambda: [unpack_seqs(bytes(r[0])) for r in conn.execute(KEPT, (thread_id, ns)).fetchall()]  # noqa: E731
    dropped = unreferenced([unpack_seqs(g) for g in gone], None, kept)
    if dropped:
        conn.execute(
            "DELETE FROM checkpoint_messages WHERE thread_id = %s AND checkpoint_ns = %s AND seq = ANY(%s)",
            (thread_id, ns, sorted(dropped)),
        )


def _one(conn: psycopg.Connection[Any], sql: str) -> Any:
    row = conn.execute(sql.encode()).fetchone()
    return row[0] if row else 0


def _count(conn: psycopg.Connection[Any], table: str) -> int:
    if _one(conn, f"SELECT to_regclass('{table}') IS NOT NULL"):
        return int(_one(conn, f"SELECT count(*) FROM {table}"))
    return 0  # not migrated yet


def _label(url: str) -> str:
    scheme, _, rest = url.partition("://")
    credentials, at, where = rest.rpartition("@")
    return f"{scheme}://{credentials.partition(':')[0]}{at}{where}"
