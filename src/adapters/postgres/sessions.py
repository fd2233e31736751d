"""SessionStore on PostgreSQL: a login on one process is a session on every process."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from adapters.postgres.database import PostgresDatabase
from ports.sessions import SessionStore


class PostgresSessionStore(SessionStore):
    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    async def _rows(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        async with self.db.cursor() as cur:
            await cur.execute(sql, args)
            return await cur.fetchall() if cur.description else []

    async def create(self, key: str, fingerprint: str, now: datetime, expires_at: datetime) -> None:
        async with self.db.cursor(transaction=True) as cur:
            await cur.execute("DELETE FROM login_sessions WHERE expires_at <= %s OR fingerprint <> %s", (now, fingerprint))
            await cur.execute(
                "INSERT INTO login_sessions (key, fingerprint, created_at, expires_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, "
                "created_at = excluded.created_at, expires_at = excluded.expires_at",
                (key, fingerprint, now, expires_at),
            )

    async def valid(self, key: str, fingerprint: str, now: datetime) -> bool:
        rows = await self._rows(
            "SELECT 1 FROM login_sessions WHERE key = %s AND fingerprint = %s AND expires_at > %s", (key, fingerprint, now)
        )
        return bool(rows)

    async def delete(self, key: str) -> bool:
        return bool(await self._rows("DELETE FROM login_sessions WHERE key = %s RETURNING key", (key,)))

    async def delete_all(self) -> int:
        return len(await self._rows("DELETE FROM login_sessions RETURNING key"))
