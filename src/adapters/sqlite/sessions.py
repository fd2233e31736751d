"""SessionStore on the SQLite file, on the run store's writer and reader threads: a
request's session check is one primary-key read on the reader thread, never on the loop."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from adapters.sqlite.database import Worker, transaction
from ports.sessions import SessionStore


def _valid(conn: sqlite3.Connection, key: str, fingerprint: str, now: float) -> bool:
    row = conn.execute(
        "SELECT 1 FROM login_sessions WHERE key = ? AND fingerprint = ? AND expires_at > ?", (key, fingerprint, now)
    ).fetchone()
    return row is not None


class SqliteSessionStore(SessionStore):
    def __init__(self, writer: Worker, reader: Worker) -> None:
        self._writer = writer
        self._reader = reader

    async def create(self, key: str, fingerprint: str, now: datetime, expires_at: datetime) -> None:
        def write(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute("DELETE FROM login_sessions WHERE expires_at <= ? OR fingerprint <> ?",
                             (now.timestamp(), fingerprint))
                conn.execute(
                    "INSERT OR REPLACE INTO login_sessions (key, fingerprint, created_at, expires_at) VALUES (?, ?, ?, ?)",
                    (key, fingerprint, now.timestamp(), expires_at.timestamp()),
                )

        await self._writer.run(write)

    async def valid(self, key: str, fingerprint: str, now: datetime) -> bool:
        return await self._reader.run(_valid, key, fingerprint, now.timestamp())

    async def delete(self, key: str) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            with transaction(conn):
                return conn.execute("DELETE FROM login_sessions WHERE key = ?", (key,)).rowcount > 0

        return await self._writer.run(write)

    async def delete_all(self) -> int:
        def write(conn: sqlite3.Connection) -> int:
            with transaction(conn):
                return int(conn.execute("DELETE FROM login_sessions").rowcount)

        return await self._writer.run(write)
