"""ScheduleStore on the SQLite file, on the run store's writer and reader. A firing's claim
is a statement of the transaction that inserts its run (`claim_firing`), and the file has
one writer at a time (BEGIN IMMEDIATE), so two processes never both take it."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from adapters.sqlite.database import Worker, transaction, unsynced
from adapters.sqlite.rows import fetchall, marks
from domain.errors import FiringTaken
from domain.model import iso
from domain.schedules import CatchUp, Firing, FiringClaim, Schedule, Timing
from ports.schedules import ScheduleStore

COLUMNS = (
    "id, owner, cron, tz, at, message, conversation_id, catch_up, enabled, ends_at, next_at, created_at, "
    "last_run_id, last_fired_for, webhook"
)
FIRING_COLUMNS = "schedule_id, scheduled_for, run_id, conversation_id, queued, state"


def _ts(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _iso(value: datetime | None) -> str | None:
    return iso(value) if value is not None else None


def schedule_from_row(row: Sequence[Any]) -> Schedule:
    sid, owner, cron, tz, at, message, cid, catch_up, enabled, ends, next_at, created, last_run, last_for, hook = row
    return Schedule(
        sid,
        owner,
        Timing(cron, tz, _ts(at)),
        message,
        datetime.fromisoformat(created),
        cid,
        CatchUp(catch_up),
        bool(enabled),
        _ts(ends),
        _ts(next_at),
        last_run,
        _ts(last_for),
        hook,
    )


def schedule_values(s: Schedule) -> tuple[object, ...]:
    t = s.timing
    return (
        s.id,
        s.owner,
        t.cron,
        t.tz,
        _iso(t.at),
        s.message,
        s.conversation_id,
        s.catch_up.value,
        int(s.enabled),
        _iso(s.ends_at),
        _iso(s.next_at),
        iso(s.created_at),
        s.last_run_id,
        _iso(s.last_fired_for),
        s.webhook,
    )


def firing_from_row(row: Sequence[Any]) -> Firing:
    sid, at, run_id, cid, queued, state = row
    return Firing(sid, datetime.fromisoformat(at), run_id, cid, bool(queued), state == "redo")


def claim_firing(c: sqlite3.Connection, claim: FiringClaim, run_id: str, conversation_id: str, queued: bool) -> None:
    """Take `claim` for run `run_id` in the caller's transaction (ports.schedules);
    FiringTaken when it cannot be, and the caller's transaction rolls back."""
    at = iso(claim.scheduled_for)
    if claim.redo:
        cur = c.execute(
            "UPDATE schedule_firings SET state = 'started', run_id = ?, queued = ? WHERE schedule_id = ? "
            "AND scheduled_for = ? AND state = 'redo'",
            (run_id, int(queued), claim.schedule_id, at),
        )
        if cur.rowcount == 0:
            raise FiringTaken()
        return
    cur = c.execute(
        "UPDATE schedules SET next_at = ?, last_run_id = ?, last_fired_for = ? WHERE id = ? AND next_at = ? AND enabled = 1",
        (_iso(claim.following), run_id, at, claim.schedule_id, iso(claim.due)),
    )
    if cur.rowcount == 0:
        raise FiringTaken()
    c.execute(
        f"INSERT INTO schedule_firings ({FIRING_COLUMNS}) VALUES (?, ?, ?, ?, ?, 'started')",
        (claim.schedule_id, at, run_id, conversation_id, int(queued)),
    )


def firing_unsaved(c: sqlite3.Connection, run_id: str) -> None:
    """Run `run_id` stopped before its message was saved: its firing (if any, and not a
    queued one, which its queue puts back) is to start again."""
    c.execute("UPDATE schedule_firings SET state = 'redo' WHERE run_id = ? AND queued = 0", (run_id,))


class SqliteSchedules(ScheduleStore):
    _writer: Worker
    _reader: Worker

    async def _change(self, sql: str, args: Sequence[object]) -> int:
        def write(c: sqlite3.Connection) -> int:
            with transaction(c):
                return c.execute(sql, args).rowcount

        return await self._writer.run(write)

    async def put_schedule(self, schedule: Schedule) -> None:
        await self._change(f"INSERT INTO schedules ({COLUMNS}) VALUES ({', '.join('?' * 15)})", schedule_values(schedule))

    async def schedule(self, schedule_id: str, owner: str | None = None) -> Schedule | None:
        rows = await self._reader.run(fetchall, f"SELECT {COLUMNS} FROM schedules WHERE id = ?", (schedule_id,))
        found = schedule_from_row(rows[0]) if rows else None
        return found if found is not None and owner in (None, found.owner) else None

    async def schedules(self, owner: str | None = None) -> Sequence[Schedule]:
        sql, args = f"SELECT {COLUMNS} FROM schedules", list[object]()
        if owner is not None:
            sql, args = sql + " WHERE owner = ?", [owner]
        rows = await self._reader.run(fetchall, sql + " ORDER BY created_at, id", args)
        return [schedule_from_row(r) for r in rows]

    async def replace_schedule(self, schedule: Schedule, owner: str | None = None) -> bool:
        values = schedule_values(schedule)
        sql = (
            "UPDATE schedules SET cron = ?, tz = ?, at = ?, message = ?, conversation_id = ?, catch_up = ?, enabled = ?, "
            "ends_at = ?, next_at = ?, last_run_id = ?, last_fired_for = ?, webhook = ? WHERE id = ?"
        )
        args = [*values[2:11], *values[12:], schedule.id]
        if owner is not None:
            sql, args = sql + " AND owner = ?", [*args, owner]
        return await self._change(sql, args) > 0

    async def delete_schedule(self, schedule_id: str, owner: str | None = None) -> bool:
        sql, args = "DELETE FROM schedules WHERE id = ?", [schedule_id]
        if owner is not None:
            sql, args = sql + " AND owner = ?", [schedule_id, owner]
        return await self._change(sql, args) > 0

    async def due(self, now: datetime, limit: int) -> Sequence[Schedule]:
        rows = await self._reader.run(
            fetchall,
            f"SELECT {COLUMNS} FROM schedules WHERE enabled = 1 AND next_at IS NOT NULL AND next_at <= ? "
            "ORDER BY next_at, id LIMIT ?",
            (iso(now), limit),
        )
        return [schedule_from_row(r) for r in rows]

    async def advance(self, schedule_id: str, expected: datetime, following: datetime | None) -> bool:
        sql = "UPDATE schedules SET next_at = ? WHERE id = ? AND next_at = ?"
        return await self._change(sql, (_iso(following), schedule_id, iso(expected))) > 0

    async def tick(self, now: datetime) -> datetime | None:
        def write(c: sqlite3.Connection) -> datetime | None:
            # no fsync: a tick lost to a power cut only makes a few late firings look missed
            with unsynced(c), transaction(c):
                row = c.execute("SELECT ticked_at FROM scheduler_ticks WHERE id = 1").fetchone()
                c.execute(
                    "INSERT INTO scheduler_ticks (id, ticked_at) VALUES (1, ?) "
                    "ON CONFLICT (id) DO UPDATE SET ticked_at = max(ticked_at, excluded.ticked_at)",
                    (iso(now),),
                )
            return datetime.fromisoformat(row[0]) if row else None

        return await self._writer.run(write)

    async def redo_firings(self, limit: int) -> Sequence[Firing]:
        rows = await self._reader.run(
            fetchall,
            f"SELECT {FIRING_COLUMNS} FROM schedule_firings WHERE state = 'redo' "
            "AND schedule_id IN (SELECT id FROM schedules) ORDER BY scheduled_for LIMIT ?",
            (limit,),
        )
        return [firing_from_row(r) for r in rows]

    async def scheduled_times(self, run_ids: Sequence[str]) -> Mapping[str, datetime]:
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            return {}
        rows = await self._reader.run(
            fetchall, f"SELECT run_id, scheduled_for FROM schedule_firings WHERE run_id IN ({marks(ids)})", ids
        )
        return {r[0]: datetime.fromisoformat(r[1]) for r in rows}

    async def firings(self, schedule_id: str, limit: int) -> Sequence[Firing]:
        rows = await self._reader.run(
            fetchall,
            f"SELECT {FIRING_COLUMNS} FROM schedule_firings WHERE schedule_id = ? ORDER BY scheduled_for DESC LIMIT ?",
            (schedule_id, limit),
        )
        return [firing_from_row(r) for r in rows]
