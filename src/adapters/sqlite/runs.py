"""RunRepository on the SQLite file (tables `conversations` and `runs`)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from adapters.sqlite.database import connect, migrate, transaction
from domain.errors import SessionInProgress
from domain.model import Conversation, Run, RunError, RunOwner, RunStatus, iso
from ports.journal import JournalEntry, ToolJournal
from ports.runs import RunRepository

_SUMMARY = """
SELECT c.id, c.title, c.created_at, c.updated_at, c.message_count,
       r.status, r.error_code, r.error_message
FROM conversations c
LEFT JOIN runs r ON r.rowid = (
    SELECT rowid FROM runs WHERE conversation_id = c.id
    ORDER BY started_at DESC, rowid DESC LIMIT 1)
"""

_RUN_COLUMNS = (
    "id, conversation_id, status, started_at, finished_at, error_code, error_message, "
    "owner_host, owner_pid, owner_started, heartbeat_at"
)


def _ts(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _conversation(row: sqlite3.Row | tuple[Any, ...]) -> Conversation:
    cid, title, created, updated, count, status, code, message = row
    return Conversation(
        id=cid,
        title=title,
        created_at=datetime.fromisoformat(created),
        updated_at=datetime.fromisoformat(updated),
        message_count=count,
        status=RunStatus(status) if status else None,
        error=RunError(code, message or "") if code else None,
    )


def _run(row: tuple[Any, ...]) -> Run:
    rid, cid, status, started, finished, code, message, host, pid, pstart, beat = row
    owner = RunOwner(host, pid, pstart) if host is not None else None
    return Run(
        id=rid,
        conversation_id=cid,
        status=RunStatus(status),
        started_at=datetime.fromisoformat(started),
        finished_at=_ts(finished),
        error_code=code,
        error_message=message,
        owner=owner,
        heartbeat_at=_ts(beat),
    )


class SqliteRunRepository(RunRepository, ToolJournal):
    """One connection, serialised by a lock; writes are BEGIN IMMEDIATE transactions so
    several processes on one file queue behind the busy timeout instead of failing."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._conn = connect(path)
        self._lock = threading.Lock()
        self.schema_version = migrate(self._conn)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def create_conversation(self, conversation_id: str, title: str, now: datetime) -> Conversation:
        with self._lock, transaction(self._conn) as c:
            c.execute(
                "INSERT INTO conversations (id, title, created_at, updated_at, message_count) "
                "VALUES (?, ?, ?, ?, 0)",
                (conversation_id, title, iso(now), iso(now)),
            )
        return Conversation(conversation_id, title, now, now)

    def get_conversation(self, conversation_id: str) -> Conversation | None:
        with self._lock:
            row = self._conn.execute(_SUMMARY + " WHERE c.id = ?", (conversation_id,)).fetchone()
        return _conversation(row) if row else None

    def list_conversations(
        self, limit: int | None = None, before: tuple[datetime, str] | None = None
    ) -> Sequence[Conversation]:
        sql, args = _SUMMARY, []
        if before is not None:
            sql += " WHERE (c.updated_at, c.id) < (?, ?)"
            args += [iso(before[0]), before[1]]
        sql += " ORDER BY c.updated_at DESC, c.id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
        return [_conversation(r) for r in rows]

    def rename_conversation(self, conversation_id: str, title: str, now: datetime) -> bool:
        with self._lock, transaction(self._conn) as c:
            cur = c.execute(
                "UPDATE conversations SET title = ?, updated_at = ? WHERE id = ?",
                (title, iso(now), conversation_id),
            )
        return cur.rowcount > 0

    def delete_conversation(self, conversation_id: str) -> bool:
        with self._lock, transaction(self._conn) as c:
            running = c.execute(
                "SELECT 1 FROM runs WHERE conversation_id = ? AND status = 'running'",
                (conversation_id,),
            ).fetchone()
            if running:
                raise SessionInProgress()
            cur = c.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))
        return cur.rowcount > 0

    def start_run(self, run: Run, now: datetime) -> None:
        owner = run.owner
        try:
            with self._lock, transaction(self._conn) as c:
                c.execute(
                    "INSERT INTO runs (id, conversation_id, status, started_at, owner_host, "
                    "owner_pid, owner_started, heartbeat_at) VALUES (?, ?, 'running', ?, ?, ?, ?, ?)",
                    (
                        run.id,
                        run.conversation_id,
                        iso(run.started_at),
                        owner.host if owner else None,
                        owner.pid if owner else None,
                        owner.started if owner else None,
                        iso(now),
                    ),
                )
                c.execute(
                    "UPDATE conversations SET updated_at = ? WHERE id = ?",
                    (iso(now), run.conversation_id),
                )
        except sqlite3.IntegrityError as e:
            if "runs.conversation_id" in str(e) or "UNIQUE" in str(e):
                raise SessionInProgress() from e
            raise

    def finish_run(
        self,
        run_id: str,
        status: RunStatus,
        message_count: int | None,
        error: RunError | None,
        now: datetime,
    ) -> bool:
        with self._lock, transaction(self._conn) as c:
            cur = c.execute(
                "UPDATE runs SET status = ?, error_code = ?, error_message = ?, finished_at = ? "
                "WHERE id = ? AND status = 'running'",
                (
                    status.value,
                    error.code if error else None,
                    error.message if error else None,
                    iso(now),
                    run_id,
                ),
            )
            if cur.rowcount == 0:
                return False
            if message_count is None:
                c.execute(
                    "UPDATE conversations SET updated_at = ? "
                    "WHERE id = (SELECT conversation_id FROM runs WHERE id = ?)",
                    (iso(now), run_id),
                )
            else:
                c.execute(
                    "UPDATE conversations SET updated_at = ?, message_count = ? "
                    "WHERE id = (SELECT conversation_id FROM runs WHERE id = ?)",
                    (iso(now), message_count, run_id),
                )
        return True

    def get_run(self, run_id: str) -> Run | None:
        with self._lock:
            row = self._conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
        return _run(row) if row else None

    def latest_run(self, conversation_id: str) -> Run | None:
        with self._lock:
            row = self._conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs WHERE conversation_id = ? "
                "ORDER BY started_at DESC, rowid DESC LIMIT 1",
                (conversation_id,),
            ).fetchone()
        return _run(row) if row else None

    def running_runs(self) -> Sequence[Run]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs WHERE status = 'running' ORDER BY started_at, rowid"
            ).fetchall()
        return [_run(r) for r in rows]

    def heartbeat(self, run_ids: Sequence[str], now: datetime) -> None:
        if not run_ids:
            return
        marks = ",".join("?" * len(run_ids))
        with self._lock, transaction(self._conn) as c:
            c.execute(
                f"UPDATE runs SET heartbeat_at = ? WHERE status = 'running' AND id IN ({marks})",
                (iso(now), *run_ids),
            )

    # --- ToolJournal ----------------------------------------------------------------------

    def call_started(self, key: str, conversation_id: str, run_id: str | None, tool: str, unsafe: bool, now: datetime) -> None:
        with self._lock, transaction(self._conn) as c:
            c.execute(
                "INSERT INTO tool_calls (key, conversation_id, run_id, tool, unsafe, started_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET attempts = attempts + 1, "
                "run_id = excluded.run_id, started_at = excluded.started_at",
                (key, conversation_id, run_id, tool, int(unsafe), iso(now)),
            )

    def entries(self, keys: Iterable[str]) -> dict[str, JournalEntry]:
        wanted = list(keys)
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        with self._lock:
            rows = self._conn.execute(
                f"SELECT key, tool, unsafe, attempts FROM tool_calls WHERE key IN ({marks})", wanted
            ).fetchall()
        return {r[0]: JournalEntry(r[0], r[1], bool(r[2]), r[3]) for r in rows}
