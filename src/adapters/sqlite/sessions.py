"""SessionStore on the SQLite file, on the run store's writer and reader threads: a
request's session check is one primary-key read on the reader thread, never on the loop."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from adapters.sqlite.database import Worker, transaction
from domain.principals import BOOTSTRAP_ID
from ports.sessions import SessionStore


def _user_of(conn: sqlite3.Connection, key: str, fingerprint: str, now: float) -> str | None:
    row = conn.execute(
        "SELECT principal FROM login_sessions WHERE key = ? AND fingerprint = ? AND expires_at > ?",
        (key, fingerprint, now),
    ).fetchone()
    return None if row is None else str(row[0])


class SqliteSessionStore(SessionStore):
    def __init__(self, writer: Worker, reader: Worker) -> None:
        self._writer = writer
        self._reader = reader

    async def create(
        self, key: str, fingerprint: str, now: datetime, expires_at: datetime, principal: str = BOOTSTRAP_ID
    ) -> None:
        def write(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute(
                    "DELETE FROM login_sessions WHERE expires_at <= ? OR fingerprint <> ?", (now.timestamp(), fingerprint)
                )
                conn.execute(
                    "INSERT OR REPLACE INTO login_sessions (key, fingerprint, created_at, expires_at, principal) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (key, fingerprint, now.timestamp(), expires_at.timestamp(), principal),
                )

        await self._writer.run(write)

    async def user_of(self, key: str, fingerprint: str, now: datetime) -> str | None:
        return await self._reader.run(_user_of, key, fingerprint, now.timestamp())

    async def delete(self, key: str) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            with transaction(conn):
                return conn.execute("DELETE FROM login_sessions WHERE key = ?", (key,)).rowcount > 0

        return await self._writer.run(write)

    async def delete_principal(self, principal: str) -> int:
        def write(conn: sqlite3.Connection) -> int:
            with transaction(conn):
                return int(conn.execute("DELETE FROM login_sessions WHERE principal = ?", (principal,)).rowcount)

        return await self._writer.run(write)
