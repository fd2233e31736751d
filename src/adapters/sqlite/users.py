"""UserStore on the SQLite file, on the run store's writer and reader threads: resolving a
request's token is one indexed read (and, at most once a minute per token, a write)."""

from __future__ import annotations

import logging
import sqlite3
from datetime import UTC, datetime
from typing import Any

from adapters.sqlite.database import Worker, transaction
from domain.errors import StorageFailure, UserExists, UserNotFound
from domain.principals import ApiToken, Principal, Role, User
from ports.users import UserStore

log = logging.getLogger(__name__)

# what else a user keeps by their id in this file, deleted with them
OWNED = ("chat_presets", "tool_allow_rules", "usage_days")
_USER = "SELECT id, name, role, disabled, created_at FROM users"
_TOKEN = "SELECT id, user_id, label, created_at, last_used_at, revoked_at FROM api_tokens"


def _time(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _user(row: tuple[Any, ...]) -> User:
    created = _time(row[4])
    assert created is not None
    return User(row[0], row[1], Role(row[2]), bool(row[3]), created)


def _token(row: tuple[Any, ...]) -> ApiToken:
    created = _time(row[3])
    assert created is not None
    return ApiToken(row[0], row[1], row[2], created, _time(row[4]), _time(row[5]))


def _find(conn: sqlite3.Connection, name_or_id: str) -> User | None:
    row = (
        conn.execute(f"{_USER} WHERE id = ?", (name_or_id,)).fetchone()
        or conn.execute(f"{_USER} WHERE name_key = ?", (name_or_id.lower(),)).fetchone()
    )
    return None if row is None else _user(row)


def _principal(conn: sqlite3.Connection, user_id: str) -> Principal | None:
    row = conn.execute(f"{_USER} WHERE id = ? AND disabled = 0", (user_id,)).fetchone()
    return None if row is None else _user(row).principal()


_BY_TOKEN = (
    "SELECT t.id, t.last_used_at, u.id, u.name, u.role FROM api_tokens t JOIN users u ON u.id = t.user_id "
    "WHERE t.hash = ? AND t.revoked_at IS NULL AND u.disabled = 0"
)


def _by_token(conn: sqlite3.Connection, token_hash: str) -> tuple[str, float | None, Principal] | None:
    row = conn.execute(_BY_TOKEN, (token_hash,)).fetchone()
    return None if row is None else (row[0], row[1], Principal(row[2], row[3], Role(row[4])))


class SqliteUserStore(UserStore):
    def __init__(self, writer: Worker, reader: Worker) -> None:
        self._writer = writer
        self._reader = reader

    async def add_user(self, user_id: str, name: str, role: Role, now: datetime) -> User:
        def write(conn: sqlite3.Connection) -> User:
            with transaction(conn):
                taken = conn.execute("SELECT 1 FROM users WHERE name_key = ?", (name.lower(),)).fetchone()
                if taken is not None:
                    raise UserExists()
                conn.execute(
                    "INSERT INTO users (id, name, name_key, role, disabled, created_at) VALUES (?, ?, ?, ?, 0, ?)",
                    (user_id, name, name.lower(), role.value, now.timestamp()),
                )
            return User(user_id, name, role, False, now)

        return await self._writer.run(write)

    async def user(self, name_or_id: str) -> User | None:
        return await self._reader.run(_find, name_or_id)

    async def users(self) -> list[User]:
        def read(conn: sqlite3.Connection) -> list[User]:
            return [_user(r) for r in conn.execute(f"{_USER} ORDER BY created_at, id")]

        return await self._reader.run(read)

    async def any_users(self) -> bool:
        def read(conn: sqlite3.Connection) -> bool:
            return conn.execute("SELECT 1 FROM users LIMIT 1").fetchone() is not None

        return await self._reader.run(read)

    async def set_disabled(self, user_id: str, disabled: bool) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            with transaction(conn):
                return conn.execute("UPDATE users SET disabled = ? WHERE id = ?", (int(disabled), user_id)).rowcount > 0

        return await self._writer.run(write)

    async def delete_user(self, user_id: str) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            with transaction(conn):
                conn.execute("DELETE FROM api_tokens WHERE user_id = ?", (user_id,))
                for table in OWNED:
                    conn.execute(f"DELETE FROM {table} WHERE owner = ?", (user_id,))
                return conn.execute("DELETE FROM users WHERE id = ?", (user_id,)).rowcount > 0

        return await self._writer.run(write)

    async def add_token(self, token_id: str, user_id: str, token_hash: str, label: str, now: datetime) -> ApiToken:
        def write(conn: sqlite3.Connection) -> ApiToken:
            with transaction(conn):
                if conn.execute("SELECT 1 FROM users WHERE id = ?", (user_id,)).fetchone() is None:
                    raise UserNotFound()
                conn.execute(
                    "INSERT INTO api_tokens (id, user_id, hash, label, created_at) VALUES (?, ?, ?, ?, ?)",
                    (token_id, user_id, token_hash, label, now.timestamp()),
                )
            return ApiToken(token_id, user_id, label, now, None, None)

        return await self._writer.run(write)

    async def tokens(self, user_id: str) -> list[ApiToken]:
        def read(conn: sqlite3.Connection) -> list[ApiToken]:
            return [_token(r) for r in conn.execute(f"{_TOKEN} WHERE user_id = ? ORDER BY created_at, id", (user_id,))]

        return await self._reader.run(read)

    async def revoke_token(self, token_id: str, now: datetime) -> ApiToken | None:
        def write(conn: sqlite3.Connection) -> ApiToken | None:
            with transaction(conn):
                conn.execute(
                    "UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (now.timestamp(), token_id)
                )
                row = conn.execute(f"{_TOKEN} WHERE id = ?", (token_id,)).fetchone()
            return None if row is None else _token(row)

        return await self._writer.run(write)

    async def by_token(self, token_hash: str, now: datetime, touch_after: float = 60.0) -> Principal | None:
        found = await self._reader.run(_by_token, token_hash)
        if found is None:
            return None
        token_id, last_used, principal = found
        if last_used is None or now.timestamp() - last_used >= touch_after:

            def touch(conn: sqlite3.Connection) -> None:
                with transaction(conn):
                    conn.execute("UPDATE api_tokens SET last_used_at = ? WHERE id = ?", (now.timestamp(), token_id))

            try:
                await self._writer.run(touch)
            except StorageFailure as e:  # the last use is news, not a condition of access
                log.warning("could not record the use of token %s: %s", token_id, e.message)
        return principal

    async def principal(self, user_id: str) -> Principal | None:
        return await self._reader.run(_principal, user_id)
