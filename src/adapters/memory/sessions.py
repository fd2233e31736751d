"""SessionStore in memory: one process's sessions, for tests and for a store-less server."""

from __future__ import annotations

import threading
from datetime import datetime

from domain.principals import BOOTSTRAP_ID
from ports.sessions import SessionStore


class InMemorySessionStore(SessionStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, tuple[str, datetime, str]] = {}  # key -> (fingerprint, expires_at, principal)

    async def create(
        self, key: str, fingerprint: str, now: datetime, expires_at: datetime, principal: str = BOOTSTRAP_ID
    ) -> None:
        with self._lock:
            for old in [k for k, (f, end, _) in self._sessions.items() if f != fingerprint or end <= now]:
                del self._sessions[old]
            self._sessions[key] = (fingerprint, expires_at, principal)

    async def user_of(self, key: str, fingerprint: str, now: datetime) -> str | None:
        with self._lock:
            found = self._sessions.get(key)
        return found[2] if found is not None and found[0] == fingerprint and now < found[1] else None

    async def delete_principal(self, principal: str) -> int:
        with self._lock:
            mine = [k for k, (_, _, p) in self._sessions.items() if p == principal]
            for key in mine:
                del self._sessions[key]
            return len(mine)

    async def delete(self, key: str) -> bool:
        with self._lock:
            return self._sessions.pop(key, None) is not None
