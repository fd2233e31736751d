"""SessionStore on PostgreSQL: a login on one process is a session on every process."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from adapters.postgres.database import PostgresDatabase
from domain.principals import BOOTSTRAP_ID
from ports.sessions import SessionStore


class PostgresSessionStore(SessionStore):
    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    async def _rows(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        async with self.db.cursor() as cur:
            await cur.execute(sql, args)
            return await cur.fetchall() if cur.description else []

    async def create(
        self, key: str, fingerprint: str, now: datetime, expires_at: datetime, principal: str = BOOTSTRAP_ID
    ) -> None:
        async with self.db.cursor(transaction=True) as cur:
            await cur.execute("DELETE FROM login_sessions WHERE expires_at <= %s OR fingerprint <> %s", (now, fingerprint))
            await cur.execute(
                "INSERT INTO login_sessions (key, fingerprint, created_at, expires_at, principal) "
                "VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, "
                "created_at = excluded.created_at, expires_at = excluded.expires_at, principal = excluded.principal",
                (key, fingerprint, now, expires_at, principal),
            )

    async def user_of(self, key: str, fingerprint: str, now: datetime) -> str | None:
        rows = await self._rows(
            "SELECT principal FROM login_sessions WHERE key = %s AND fingerprint = %s AND expires_at > %s",
            (key, fingerprint, now),
        )
        return str(rows[0][0]) if rows else None

    async def delete(self, key: str) -> bool:
        return bool(await self._rows("DELETE FROM login_sessions WHERE key = %s RETURNING key", (key,)))

    async def delete_principal(self, principal: str) -> int:
        return len(await self._rows("DELETE FROM login_sessions WHERE principal = %s RETURNING key", (principal,)))
