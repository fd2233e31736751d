"""UserStore in memory: one process's users, for tests and a store-less server."""

from __future__ import annotations

import dataclasses
import threading
from datetime import datetime

from domain.errors import UserExists, UserNotFound
from domain.principals import ApiToken, Principal, Role, User
from ports.users import UserStore


class InMemoryUserStore(UserStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users: dict[str, User] = {}
        self._tokens: dict[str, tuple[str, ApiToken]] = {}  # id -> (hash, record)

    async def add_user(self, user_id: str, name: str, role: Role, now: datetime) -> User:
        with self._lock:
            if any(u.name.lower() == name.lower() for u in self._users.values()):
                raise UserExists()
            user = self._users[user_id] = User(user_id, name, role, False, now)
            return user

    def _find(self, name_or_id: str) -> User | None:
        found = self._users.get(name_or_id)
        return found or next((u for u in self._users.values() if u.name.lower() == name_or_id.lower()), None)

    async def user(self, name_or_id: str) -> User | None:
        with self._lock:
            return self._find(name_or_id)

    async def users(self) -> list[User]:
        with self._lock:
            return sorted(self._users.values(), key=lambda u: (u.created_at, u.id))

    async def any_users(self) -> bool:
        return bool(self._users)

    async def set_disabled(self, user_id: str, disabled: bool) -> bool:
        with self._lock:
            user = self._users.get(user_id)
            if user is None:
                return False
            self._users[user_id] = dataclasses.replace(user, disabled=disabled)
            return True

    async def delete_user(self, user_id: str) -> bool:
        with self._lock:
            for token_id in [i for i, (_, t) in self._tokens.items() if t.user_id == user_id]:
                del self._tokens[token_id]
            return self._users.pop(user_id, None) is not None

    async def add_token(self, token_id: str, user_id: str, token_hash: str, label: str, now: datetime) -> ApiToken:
        with self._lock:
            if user_id not in self._users:
                raise UserNotFound()
            token = ApiToken(token_id, user_id, label, now, None, None)
            self._tokens[token_id] = (token_hash, token)
            return token

    async def tokens(self, user_id: str) -> list[ApiToken]:
        with self._lock:
            mine = [t for _, t in self._tokens.values() if t.user_id == user_id]
        return sorted(mine, key=lambda t: (t.created_at, t.id))

    async def revoke_token(self, token_id: str, now: datetime) -> ApiToken | None:
        with self._lock:
            found = self._tokens.get(token_id)
            if found is None:
                return None
            hashed, token = found
            if token.revoked_at is None:
                token = dataclasses.replace(token, revoked_at=now)
                self._tokens[token_id] = (hashed, token)
            return token

    async def by_token(self, token_hash: str, now: datetime, touch_after: float = 60.0) -> Principal | None:
        with self._lock:
            found = next(((h, t) for h, t in self._tokens.values() if h == token_hash), None)
            if found is None or found[1].revoked_at is not None:
                return None
            token = found[1]
            user = self._users.get(token.user_id)
            if user is None or user.disabled:
                return None
            if token.last_used_at is None or (now - token.last_used_at).total_seconds() >= touch_after:
                self._tokens[token.id] = (token_hash, dataclasses.replace(token, last_used_at=now))
            return user.principal()

    async def principal(self, user_id: str) -> Principal | None:
        with self._lock:
            user = self._users.get(user_id)
        return None if user is None or user.disabled else user.principal()
