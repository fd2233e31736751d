"""ScheduleStore on PostgreSQL, on the run store's pool. A firing's claim locks the
schedule's row with FOR UPDATE SKIP LOCKED in the transaction that inserts its run
(`claim_firing`): a process that finds it locked moves on at once (another is starting it),
and one that finds `next_at` moved on was too late; either way it stores nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from psycopg import AsyncCursor

from adapters.postgres.database import PostgresDatabase
from domain.errors import FiringTaken
from domain.schedules import CatchUp, Firing, FiringClaim, Schedule, Timing
from ports.schedules import ScheduleStore

COLUMNS = (
    "id, owner, cron, tz, at, message, conversation_id, catch_up, enabled, ends_at, next_at, created_at, "
    "last_run_id, last_fired_for, webhook"
)
FIRING_COLUMNS = "schedule_id, scheduled_for, run_id, conversation_id, queued, state"


def schedule_from_row(row: Sequence[Any]) -> Schedule:
    sid, owner, cron, tz, at, message, cid, catch_up, enabled, ends, next_at, created, last_run, last_for, hook = row
    return Schedule(
        sid,
        owner,
        Timing(cron, tz, at),
        message,
        created,
        cid,
        CatchUp(catch_up),
        enabled,
        ends,
        next_at,
        last_run,
        last_for,
        hook,
    )


def schedule_values(s: Schedule) -> tuple[object, ...]:
    t = s.timing
    return (
        s.id,
        s.owner,
        t.cron,
        t.tz,
        t.at,
        s.message,
        s.conversation_id,
        s.catch_up.value,
        s.enabled,
        s.ends_at,
        s.next_at,
        s.created_at,
        s.last_run_id,
        s.last_fired_for,
        s.webhook,
    )


def firing_from_row(row: Sequence[Any]) -> Firing:
    sid, at, run_id, cid, queued, state = row
    return Firing(sid, at, run_id, cid, queued, state == "redo")


async def claim_firing(cur: AsyncCursor[Any], claim: FiringClaim, run_id: str, conversation_id: str, queued: bool) -> None:
    """Take `claim` for run `run_id` in the caller's transaction (ports.schedules);
    FiringTaken when it cannot be, and the caller's transaction rolls back."""
    if claim.redo:
        await cur.execute(
            "UPDATE schedule_firings SET state = 'started', run_id = %s, queued = %s WHERE (schedule_id, scheduled_for) IN "
            "(SELECT schedule_id, scheduled_for FROM schedule_firings WHERE schedule_id = %s AND scheduled_for = %s "
            "AND state = 'redo' FOR UPDATE SKIP LOCKED)",
            (run_id, queued, claim.schedule_id, claim.scheduled_for),
        )
        if cur.rowcount == 0:
            raise FiringTaken()
        return
    await cur.execute(
        "SELECT 1 FROM schedules WHERE id = %s AND next_at = %s AND enabled FOR UPDATE SKIP LOCKED",
        (claim.schedule_id, claim.due),
    )
    if await cur.fetchone() is None:
        raise FiringTaken()
    await cur.execute(
        "UPDATE schedules SET next_at = %s, last_run_id = %s, last_fired_for = %s WHERE id = %s",
        (claim.following, run_id, claim.scheduled_for, claim.schedule_id),
    )
    await cur.execute(
        f"INSERT INTO schedule_firings ({FIRING_COLUMNS}) VALUES (%s, %s, %s, %s, %s, 'started')",
        (claim.schedule_id, claim.scheduled_for, run_id, conversation_id, queued),
    )


async def firing_unsaved(cur: AsyncCursor[Any], run_id: str) -> None:
    """Run `run_id` stopped before its message was saved: its firing (if any, and not a
    queued one, which its queue puts back) is to start again."""
    await cur.execute("UPDATE schedule_firings SET state = 'redo' WHERE run_id = %s AND NOT queued", (run_id,))


class PostgresSchedules(ScheduleStore):
    db: PostgresDatabase

    async def ready(self) -> None:
        raise NotImplementedError

    async def _rows(self, sql: str, args: Sequence[object] | Mapping[str, object] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    async def put_schedule(self, schedule: Schedule) -> None:
        await self._rows(f"INSERT INTO schedules ({COLUMNS}) VALUES ({', '.join(['%s'] * 15)})", schedule_values(schedule))

    async def schedule(self, schedule_id: str, owner: str | None = None) -> Schedule | None:
        rows = await self._rows(f"SELECT {COLUMNS} FROM schedules WHERE id = %s", (schedule_id,))
        found = schedule_from_row(rows[0]) if rows else None
        return found if found is not None and owner in (None, found.owner) else None

    async def schedules(self, owner: str | None = None) -> Sequence[Schedule]:
        sql, args = f"SELECT {COLUMNS} FROM schedules", list[object]()
        if owner is not None:
            sql, args = sql + " WHERE owner = %s", [owner]
        return [schedule_from_row(r) for r in await self._rows(sql + " ORDER BY created_at, id", args)]

    async def replace_schedule(self, schedule: Schedule, owner: str | None = None) -> bool:
        values = schedule_values(schedule)
        sql = (
            "UPDATE schedules SET cron = %s, tz = %s, at = %s, message = %s, conversation_id = %s, catch_up = %s, "
            "enabled = %s, ends_at = %s, next_at = %s, last_run_id = %s, last_fired_for = %s, webhook = %s WHERE id = %s"
        )
        args = [*values[2:11], *values[12:], schedule.id]
        if owner is not None:
            sql, args = sql + " AND owner = %s", [*args, owner]
        return bool(await self._rows(sql + " RETURNING id", args))

    async def delete_schedule(self, schedule_id: str, owner: str | None = None) -> bool:
        sql, args = "DELETE FROM schedules WHERE id = %s", [schedule_id]
        if owner is not None:
            sql, args = sql + " AND owner = %s", [schedule_id, owner]
        return bool(await self._rows(sql + " RETURNING id", args))

    async def due(self, now: datetime, limit: int) -> Sequence[Schedule]:
        rows = await self._rows(
            f"SELECT {COLUMNS} FROM schedules WHERE enabled AND next_at IS NOT NULL AND next_at <= %s "
            "ORDER BY next_at, id LIMIT %s",
            (now, limit),
        )
        return [schedule_from_row(r) for r in rows]

    async def advance(self, schedule_id: str, expected: datetime, following: datetime | None) -> bool:
        rows = await self._rows(
            "UPDATE schedules SET next_at = %s WHERE id = %s AND next_at = %s RETURNING id", (following, schedule_id, expected)
        )
        return bool(rows)

    async def tick(self, now: datetime) -> datetime | None:
        await self.ready()
        async with self.db.cursor(transaction=True) as cur:
            # the row locked to the commit: each tick reads the one before it
            await cur.execute("SELECT ticked_at FROM scheduler_ticks WHERE id = 1 FOR UPDATE")
            row = await cur.fetchone()
            await cur.execute(
                "INSERT INTO scheduler_ticks (id, ticked_at) VALUES (1, %s) ON CONFLICT (id) DO UPDATE "
                "SET ticked_at = greatest(scheduler_ticks.ticked_at, excluded.ticked_at)",
                (now,),
            )
        return row[0] if row else None

    async def redo_firings(self, limit: int) -> Sequence[Firing]:
        rows = await self._rows(
            f"SELECT {FIRING_COLUMNS} FROM schedule_firings WHERE state = 'redo' "
            "AND schedule_id IN (SELECT id FROM schedules) ORDER BY scheduled_for LIMIT %s",
            (limit,),
        )
        return [firing_from_row(r) for r in rows]

    async def scheduled_times(self, run_ids: Sequence[str]) -> Mapping[str, datetime]:
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            return {}
        rows = await self._rows("SELECT run_id, scheduled_for FROM schedule_firings WHERE run_id = ANY(%s)", (ids,))
        return {r[0]: r[1] for r in rows}

    async def firings(self, schedule_id: str, limit: int) -> Sequence[Firing]:
        rows = await self._rows(
            f"SELECT {FIRING_COLUMNS} FROM schedule_firings WHERE schedule_id = %s ORDER BY scheduled_for DESC LIMIT %s",
            (schedule_id, limit),
        )
        return [firing_from_row(r) for r in rows]
