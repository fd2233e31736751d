"""A process's presence on the database: one dedicated connection that holds the process's
liveness lock and receives the notifications of new run events.

Liveness across machines: the connection holds a session advisory lock keyed on the
process's instance, and the instance is registered in `processes`. PostgreSQL frees a
session's locks when its backend ends, a few ms after a kill -9 of the client (measured),
so a registered instance whose lock nobody holds is dead, while a paused process (SIGSTOP,
a long GC, a blocked loop) keeps its session and so its runs. An unregistered owner (a
process that never opened a presence) falls back to the heartbeat lease.

Followers are woken by `NOTIFY sophos_events, '<run id>'` sent in the transaction that
writes the events; they also re-read every poll interval, since a notification can be lost
with the connection.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

import psycopg
from psycopg import AsyncConnection

from adapters.postgres.database import connection_options
from adapters.storage.wakeups import Wakeups
from domain.model import RunOwner

log = logging.getLogger(__name__)

CHANNEL = "sophos_events"
RECONNECT_SECONDS = 0.5

# Is the owner of run `r` (joined with its `processes` row `p`) alive? Its lock is held.
# pg_locks shows a bigint advisory key as classid (high 32 bits), objid (low 32), objsubid 1.
OWNER_ALIVE = """EXISTS (SELECT 1 FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.classid::bigint = p.lock_key >> 32 AND l.objid::bigint = p.lock_key & 4294967295)"""


def lock_key(instance: str) -> int:
    """A stable, positive 63-bit advisory lock key for an instance id."""
    return int.from_bytes(hashlib.sha256(instance.encode()).digest()[:8], "big") >> 1


class Presence:
    def __init__(self, url: str, owner: RunOwner | None, wakeups: Wakeups) -> None:
        self.url = url
        self.owner = owner
        self.wakeups = wakeups
        self.ready = asyncio.Event()  # set while the lock is held and LISTEN is on
        self._task: asyncio.Task[None] | None = None
        self._conn: AsyncConnection[Any] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._hold(), name="sophos-presence")

    async def _hold(self) -> None:
        while True:
            try:
                await self._session()
            except (psycopg.Error, OSError) as e:
                log.warning("database presence lost (%s: %s); reconnecting", type(e).__name__, str(e).strip())
            self.ready.clear()
            await asyncio.sleep(RECONNECT_SECONDS)

    async def _session(self) -> None:
        async with await AsyncConnection.connect(self.url, **connection_options()) as conn:
            self._conn = conn
            owner = self.owner
            if owner is not None:
                key = lock_key(owner.instance)
                await conn.execute("SELECT pg_advisory_lock(%s)", (key,))
                await conn.execute(
                    "INSERT INTO processes (instance, lock_key, host, pid) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT (instance) DO NOTHING",
                    (owner.instance, key, owner.host, owner.pid),
                )
            await conn.execute(f"LISTEN {CHANNEL}")
            self.ready.set()
            async for note in conn.notifies():
                self.wakeups.wake([note.payload])

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if self._conn is not None and not self._conn.closed:
            await self._conn.close()
