"""UsageStore and AuditLog on PostgreSQL: every process adds to the same rows."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from adapters.postgres.database import PostgresDatabase
from adapters.postgres.traces import END
from adapters.storage.span_rows import attributes_json
from domain.audit import AuditEntry
from domain.traces import SpanEnd
from domain.usage import Cost, UsageRow
from ports.audit import AuditLog
from ports.usage import UsageStore

ADD = """
INSERT INTO usage_days AS u (owner, model, day, input_tokens, output_tokens, model_seconds, tool_seconds, calls, estimated_calls)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (owner, day, model) DO UPDATE SET
    input_tokens = u.input_tokens + excluded.input_tokens,
    output_tokens = u.output_tokens + excluded.output_tokens,
    model_seconds = u.model_seconds + excluded.model_seconds,
    tool_seconds = u.tool_seconds + excluded.tool_seconds,
    calls = u.calls + excluded.calls,
    estimated_calls = u.estimated_calls + excluded.estimated_calls
"""
COLUMNS = "owner, model, day, input_tokens, output_tokens, model_seconds, tool_seconds, calls, estimated_calls"


class PostgresUsageStore(UsageStore):
    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    async def add(self, user: str, model: str, day: date, cost: Cost, span: SpanEnd | None = None) -> None:
        estimated = cost.calls if cost.estimated else 0
        values = (user, model, day, cost.input_tokens, cost.output_tokens, cost.model_seconds, cost.tool_seconds, cost.calls)
        async with self.db.cursor(transaction=span is not None) as cur:
            await cur.execute(ADD, (*values, estimated))
            if span is not None:
                await cur.execute(END, (span.ended, span.status.value, attributes_json(span.attributes), span.span_id))

    async def rows(self, user: str | None, first: date, last: date) -> Sequence[UsageRow]:
        args: list[Any]
        where, args = "day BETWEEN %s AND %s", [first, last]
        if user is not None:
            where, args = where + " AND owner = %s", [*args, user]
        async with self.db.cursor() as cur:
            await cur.execute(
                f'SELECT {COLUMNS} FROM usage_days WHERE {where} ORDER BY day, owner COLLATE "C", model COLLATE "C"', args
            )
            found = await cur.fetchall()
        return [UsageRow(u, m, d, int(i), int(o), float(ms), float(ts), int(n), int(e)) for u, m, d, i, o, ms, ts, n, e in found]

    async def tokens(self, user: str, day: date) -> int:
        async with self.db.cursor() as cur:
            await cur.execute(
                "SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM usage_days WHERE owner = %s AND day = %s", (user, day)
            )
            row = await cur.fetchone()
        return int(row[0]) if row else 0


class PostgresAuditLog(AuditLog):
    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    async def append(self, entry: AuditEntry) -> None:
        async with self.db.cursor() as cur:
            await cur.execute(
                "INSERT INTO audit_log (at, actor, action, origin, target, detail) VALUES (%s, %s, %s, %s, %s, %s)",
                (entry.at, entry.actor, entry.action, entry.origin, entry.target, entry.detail),
            )

    async def entries(self, since: datetime | None, limit: int) -> Sequence[AuditEntry]:
        where, args = ("WHERE at >= %s", (since, limit)) if since else ("", (limit,))
        async with self.db.cursor() as cur:
            await cur.execute(
                f"SELECT seq, at, actor, action, origin, target, detail FROM audit_log {where} ORDER BY seq LIMIT %s", args
            )
            found = await cur.fetchall()
        return [AuditEntry(at, a, act, o, t, d, int(seq)) for seq, at, a, act, o, t, d in found]

    async def prune(self, before: datetime) -> int:
        async with self.db.cursor() as cur:
            await cur.execute("DELETE FROM audit_log WHERE at < %s", (before,))
            return int(cur.rowcount)
