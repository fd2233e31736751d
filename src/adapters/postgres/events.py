"""The run event log, cancel requests and the tool journal on PostgreSQL: the part of the
run store that processes use to follow, stop and account for each other's runs (a mixin of
PostgresRunStore, on its pool)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from adapters.postgres.database import PostgresDatabase
from adapters.postgres.presence import CHANNEL, OWNER_ALIVE
from adapters.postgres.rows import stamp
from adapters.storage.event_rows import pack, unpack
from adapters.storage.wakeups import Wakeups
from domain.errors import RunLost
from ports.events import EventBatch, RunEventLog
from ports.journal import JournalEntry, ToolJournal
from ports.signals import RunSignals

NOTIFY = f"SELECT pg_notify('{CHANNEL}', id) FROM unnest(%s::text[]) AS id"


class PostgresRunEvents(RunEventLog, RunSignals, ToolJournal):
    db: PostgresDatabase
    poll_interval: float
    _wakeups: Wakeups

    async def ready(self) -> None:
        raise NotImplementedError

    async def _rows(self, sql: str, args: Sequence[object] | Mapping[str, object] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    # --- RunEventLog ---------------------------------------------------------------------

    async def append(self, batches: Mapping[str, EventBatch]) -> None:
        rows = [(rid, seq, name, Jsonb(data)) for rid, batch in batches.items() for seq, name, data in pack(batch)]
        if not rows:
            return
        await self.ready()
        async with self.db.cursor(transaction=True) as cur:
            await cur.execute("SELECT id FROM runs WHERE status = 'running' AND id = ANY(%s)", (list(batches),))
            live = {r[0] for r in await cur.fetchall()}
            await cur.executemany(
                "INSERT INTO run_events (run_id, seq, event, data) VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                [r for r in rows if r[0] in live],
            )
            await cur.execute(NOTIFY, (sorted(live),))  # delivered at commit
        self._wakeups.wake(batches)

    async def read(self, run_id: str, after: int) -> EventBatch:
        rows = await self._rows(
            "SELECT seq, event, data FROM run_events WHERE run_id = %s AND seq > %s ORDER BY seq", (run_id, after)
        )
        return unpack(rows, after)

    async def wait(self, run_id: str, after: int, timeout: float) -> EventBatch:
        return await self._wakeups.wait(run_id, lambda: self.read(run_id, after), timeout, self.poll_interval)

    async def prune(self, retention_seconds: float) -> int:
        await self.ready()
        async with self.db.cursor() as cur:
            await cur.execute(
                "DELETE FROM run_events e USING runs r WHERE r.id = e.run_id AND r.status <> 'running' "
                "AND r.ended_at < now() - make_interval(secs => %s)",
                (retention_seconds,),
            )
            deleted = cur.rowcount
            # dead processes, once none of their runs is left running
            await cur.execute(
                f"DELETE FROM processes p WHERE NOT {OWNER_ALIVE} AND NOT EXISTS (SELECT 1 FROM runs r "
                "WHERE r.owner_instance = p.instance AND r.status = 'running')"
            )
            return deleted

    # --- RunSignals ----------------------------------------------------------------------

    async def request_cancel(self, run_id: str) -> bool:
        return bool(
            await self._rows(
                "UPDATE runs SET cancel_requested_at = coalesce(cancel_requested_at, now()) "
                "WHERE id = %s AND status = 'running' RETURNING id",
                (run_id,),
            )
        )

    async def cancel_requested(self, run_ids: Sequence[str]) -> set[str]:
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            return set()
        rows = await self._rows(
            "SELECT id FROM runs WHERE status = 'running' AND cancel_requested_at IS NOT NULL AND id = ANY(%s)",
            (ids,),
        )
        return {r[0] for r in rows}

    # --- ToolJournal ---------------------------------------------------------------------

    async def call_started(
        self, key: str, conversation_id: str, run_id: str | None, tool: str, unsafe: bool, now: datetime
    ) -> None:
        await self.ready()
        async with self.db.cursor(transaction=True) as cur:
            if run_id is not None:
                # FOR SHARE: a reclaim of the run waits for this record, or this sees it
                await cur.execute("SELECT 1 FROM runs WHERE id = %s AND status = 'running' FOR SHARE", (run_id,))
                if await cur.fetchone() is None:
                    raise RunLost()
            await cur.execute(
                "INSERT INTO tool_calls (key, conversation_id, run_id, tool, unsafe, started_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE SET "
                "attempts = tool_calls.attempts + 1, run_id = excluded.run_id, started_at = excluded.started_at",
                (key, conversation_id, run_id, tool, unsafe, stamp(now)),
            )

    async def entries(self, keys: Iterable[str]) -> dict[str, JournalEntry]:
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        rows = await self._rows("SELECT key, tool, unsafe, attempts FROM tool_calls WHERE key = ANY(%s)", (wanted,))
        return {r[0]: JournalEntry(r[0], r[1], bool(r[2]), r[3]) for r in rows}
