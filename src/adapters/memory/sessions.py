"""SessionStore in memory: one process's sessions, for tests and for a store-less server."""

from __future__ import annotations

import threading
from datetime import datetime

from ports.sessions import SessionStore


class InMemorySessionStore(SessionStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, tuple[str, datetime]] = {}  # key -> (fingerprint, expires_at)

    async def create(self, key: str, fingerprint: str, now: datetime, expires_at: datetime) -> None:
        with self._lock:
            for old in [k for k, (f, end) in self._sessions.items() if f != fingerprint or end <= now]:
                del self._sessions[old]
            self._sessions[key] = (fingerprint, expires_at)

    async def valid(self, key: str, fingerprint: str, now: datetime) -> bool:
        with self._lock:
            found = self._sessions.get(key)
        return found is not None and found[0] == fingerprint and now < found[1]

    async def delete(self, key: str) -> bool:
        with self._lock:
            return self._sessions.pop(key, None) is not None

    async def delete_all(self) -> int:
        with self._lock:
            count = len(self._sessions)
            self._sessions.clear()
            return count
