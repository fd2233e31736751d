"""UsageStore and AuditLog on the SQLite file, on the run store's writer and reader threads."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, date, datetime

from adapters.sqlite.database import Worker, transaction, unsynced
from adapters.sqlite.rows import fetchall
from adapters.sqlite.traces import END
from adapters.storage.span_rows import attributes_json
from domain.audit import AuditEntry
from domain.traces import SpanEnd
from domain.usage import Cost, UsageRow
from ports.audit import AuditLog
from ports.usage import UsageStore

ADD = """
INSERT INTO usage_days (owner, model, day, input_tokens, output_tokens, model_seconds, tool_seconds, calls, estimated_calls)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (owner, day, model) DO UPDATE SET
    input_tokens = input_tokens + excluded.input_tokens,
    output_tokens = output_tokens + excluded.output_tokens,
    model_seconds = model_seconds + excluded.model_seconds,
    tool_seconds = tool_seconds + excluded.tool_seconds,
    calls = calls + excluded.calls,
    estimated_calls = estimated_calls + excluded.estimated_calls
"""
COLUMNS = "owner, model, day, input_tokens, output_tokens, model_seconds, tool_seconds, calls, estimated_calls"


def usage_values(user: str, model: str, day: date, cost: Cost) -> tuple[object, ...]:
    estimated = cost.calls if cost.estimated else 0
    return (
        user,
        model,
        day.isoformat(),
        cost.input_tokens,
        cost.output_tokens,
        cost.model_seconds,
        cost.tool_seconds,
        cost.calls,
        estimated,
    )


class SqliteUsageStore(UsageStore):
    def __init__(self, writer: Worker, reader: Worker) -> None:
        self._writer = writer
        self._reader = reader

    async def add(self, user: str, model: str, day: date, cost: Cost, span: SpanEnd | None = None) -> None:
        def write(c: sqlite3.Connection) -> None:
            # no fsync of its own (a turn's durable writes stay two): a kill -9 loses none,
            # a power cut at most the last counts, and the next synced commit makes them durable
            with unsynced(c), transaction(c):
                c.execute(ADD, usage_values(user, model, day, cost))
                if span is not None:
                    c.execute(END, (span.ended, span.status.value, attributes_json(span.attributes), span.span_id))

        await self._writer.run(write)

    async def rows(self, user: str | None, first: date, last: date) -> Sequence[UsageRow]:
        where, args = "day BETWEEN ? AND ?", [first.isoformat(), last.isoformat()]
        if user is not None:
            where, args = where + " AND owner = ?", [*args, user]
        sql = f"SELECT {COLUMNS} FROM usage_days WHERE {where} ORDER BY day, owner, model"
        found = await self._reader.run(fetchall, sql, tuple(args))
        return [UsageRow(u, m, date.fromisoformat(d), i, o, ms, ts, n, e) for u, m, d, i, o, ms, ts, n, e in found]

    async def tokens(self, user: str, day: date) -> int:
        sql = "SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM usage_days WHERE owner = ? AND day = ?"
        ((total,),) = await self._reader.run(fetchall, sql, (user, day.isoformat()))
        return int(total)


class SqliteAuditLog(AuditLog):
    def __init__(self, writer: Worker, reader: Worker) -> None:
        self._writer = writer
        self._reader = reader

    async def append(self, entry: AuditEntry) -> None:
        row = (entry.at.timestamp(), entry.actor, entry.action, entry.origin, entry.target, entry.detail)

        def write(c: sqlite3.Connection) -> None:
            with transaction(c):
                c.execute("INSERT INTO audit_log (at, actor, action, origin, target, detail) VALUES (?, ?, ?, ?, ?, ?)", row)

        await self._writer.run(write)

    async def entries(self, since: datetime | None, limit: int) -> Sequence[AuditEntry]:
        sql = "SELECT seq, at, actor, action, origin, target, detail FROM audit_log WHERE at >= ? ORDER BY seq LIMIT ?"
        found = await self._reader.run(fetchall, sql, (since.timestamp() if since else 0.0, limit))
        return [AuditEntry(datetime.fromtimestamp(at, UTC), a, act, o, t, d, seq) for seq, at, a, act, o, t, d in found]

    async def prune(self, before: datetime) -> int:
        def write(c: sqlite3.Connection) -> int:
            with transaction(c):
                return int(c.execute("DELETE FROM audit_log WHERE at < ?", (before.timestamp(),)).rowcount)

        return await self._writer.run(write)
