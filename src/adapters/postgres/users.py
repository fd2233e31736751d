"""UserStore on PostgreSQL: a user added or a token revoked on one process is so on every process."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from adapters.postgres.database import PostgresDatabase
from domain.errors import StorageFailure, UserExists, UserNotFound
from domain.principals import ApiToken, Principal, Role, User
from ports.users import UserStore

log = logging.getLogger(__name__)

_USER = "SELECT id, name, role, disabled, created_at FROM users"
_TOKEN = "SELECT id, user_id, label, created_at, last_used_at, revoked_at FROM api_tokens"


def _user(row: tuple[Any, ...]) -> User:
    return User(row[0], row[1], Role(row[2]), bool(row[3]), row[4])


def _token(row: tuple[Any, ...]) -> ApiToken:
    return ApiToken(row[0], row[1], row[2], row[3], row[4], row[5])


# what else a user keeps by their id in this database, deleted with them
OWNED = ("chat_presets", "tool_allow_rules", "usage_days")


class PostgresUserStore(UserStore):
    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    async def _rows(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        async with self.db.cursor() as cur:
            await cur.execute(sql, args)
            return await cur.fetchall() if cur.description else []

    async def add_user(self, user_id: str, name: str, role: Role, now: datetime) -> User:
        added = await self._rows(
            "INSERT INTO users (id, name, name_key, role, disabled, created_at) VALUES (%s, %s, %s, %s, false, %s) "
            "ON CONFLICT DO NOTHING RETURNING id",
            (user_id, name, name.lower(), role.value, now),
        )
        if not added:
            raise UserExists()
        return User(user_id, name, role, False, now)

    async def user(self, name_or_id: str) -> User | None:
        rows = await self._rows(
            f"{_USER} WHERE id = %s OR name_key = %s ORDER BY id = %s DESC LIMIT 1", (name_or_id, name_or_id.lower(), name_or_id)
        )
        return _user(rows[0]) if rows else None

    async def users(self) -> list[User]:
        return [_user(r) for r in await self._rows(f"{_USER} ORDER BY created_at, id")]

    async def any_users(self) -> bool:
        return bool(await self._rows("SELECT 1 FROM users LIMIT 1"))

    async def set_disabled(self, user_id: str, disabled: bool) -> bool:
        return bool(await self._rows("UPDATE users SET disabled = %s WHERE id = %s RETURNING id", (disabled, user_id)))

    async def delete_user(self, user_id: str) -> bool:
        async with self.db.cursor(transaction=True) as cur:
            await cur.execute("DELETE FROM api_tokens WHERE user_id = %s", (user_id,))
            for table in OWNED:
                await cur.execute(f"DELETE FROM {table} WHERE owner = %s".encode(), (user_id,))
            await cur.execute("DELETE FROM users WHERE id = %s RETURNING id", (user_id,))
            return await cur.fetchone() is not None

    async def add_token(self, token_id: str, user_id: str, token_hash: str, label: str, now: datetime) -> ApiToken:
        added = await self._rows(
            "INSERT INTO api_tokens (id, user_id, hash, label, created_at) "
            "SELECT %s, id, %s, %s, %s FROM users WHERE id = %s RETURNING id",
            (token_id, token_hash, label, now, user_id),
        )
        if not added:
            raise UserNotFound()
        return ApiToken(token_id, user_id, label, now, None, None)

    async def tokens(self, user_id: str) -> list[ApiToken]:
        return [_token(r) for r in await self._rows(f"{_TOKEN} WHERE user_id = %s ORDER BY created_at, id", (user_id,))]

    async def revoke_token(self, token_id: str, now: datetime) -> ApiToken | None:
        rows = await self._rows(
            "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, %s) WHERE id = %s "
            "RETURNING id, user_id, label, created_at, last_used_at, revoked_at",
            (now, token_id),
        )
        return _token(rows[0]) if rows else None

    async def by_token(self, token_hash: str, now: datetime, touch_after: float = 60.0) -> Principal | None:
        rows = await self._rows(
            "SELECT t.id, t.last_used_at, u.id, u.name, u.role FROM api_tokens t JOIN users u ON u.id = t.user_id "
            "WHERE t.hash = %s AND t.revoked_at IS NULL AND NOT u.disabled",
            (token_hash,),
        )
        if not rows:
            return None
        token_id, last_used, user_id, name, role = rows[0]
        if last_used is None or (now - last_used).total_seconds() >= touch_after:
            try:
                await self._rows("UPDATE api_tokens SET last_used_at = %s WHERE id = %s", (now, token_id))
            except StorageFailure as e:  # the last use is news, not a condition of access
                log.warning("could not record the use of token %s: %s", token_id, e.message)
        return Principal(user_id, name, Role(role))

    async def principal(self, user_id: str) -> Principal | None:
        rows = await self._rows(f"{_USER} WHERE id = %s AND NOT disabled", (user_id,))
        return _user(rows[0]).principal() if rows else None
