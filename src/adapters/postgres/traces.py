"""SpanStore on PostgreSQL: every process ships from the same rows; a claim locks its rows
with FOR UPDATE SKIP LOCKED and leases them, so two processes never send the same spans at
once, and a dead claimant's spans are claimed again after the lease."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from adapters.postgres.database import PostgresDatabase
from adapters.storage.span_rows import COLUMNS, attributes_json, pending_of, span_of, span_row
from domain.traces import Attribute, PendingSpan, SpanRecord, SpanStatus
from ports.traces import SpanStore

RECORD = f"""
INSERT INTO trace_spans ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb)
ON CONFLICT (span_id) DO NOTHING
"""
END = """
UPDATE trace_spans SET ended = %s, status = %s, attributes = attributes || %s::jsonb
WHERE span_id = %s AND ended IS NULL AND NOT acked
"""
SPAN_COLUMNS = ", ".join(f"s.{c.strip()}" for c in COLUMNS.split(","))
CLAIM = f"""
WITH ready AS (
    SELECT s.span_id FROM trace_spans s LEFT JOIN runs r ON r.id = s.run_id
    WHERE NOT s.acked AND s.claimed_until <= %s
      AND (r.status IS NULL OR r.status <> 'running' OR (s.kind <> 'agent' AND s.ended IS NOT NULL))
    ORDER BY s.seq LIMIT %s
    FOR UPDATE OF s SKIP LOCKED
), claimed AS (
    UPDATE trace_spans t SET claimed_until = %s FROM ready WHERE t.span_id = ready.span_id RETURNING t.*
)
SELECT {SPAN_COLUMNS}, r.status, r.finished_at FROM claimed s LEFT JOIN runs r ON r.id = s.run_id ORDER BY s.seq
"""
LATEST = f"""
SELECT {COLUMNS} FROM trace_spans WHERE conversation_id = %s AND kind = 'agent' ORDER BY started DESC, seq DESC LIMIT 1
"""


def _row(row: Sequence[Any]) -> tuple[Any, ...]:
    # JSONB comes back decoded: the shared reader takes the text
    values = list(row)
    values[10] = values[10] if isinstance(values[10], str) else json.dumps(values[10])
    return tuple(values)


class PostgresSpanStore(SpanStore):
    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    async def record(self, spans: Sequence[SpanRecord]) -> None:
        async with self.db.cursor(transaction=len(spans) > 1) as cur:
            await cur.executemany(RECORD, [span_row(s) for s in spans])

    async def end(self, span_id: str, ended: int, status: SpanStatus, attributes: dict[str, Attribute]) -> None:
        async with self.db.cursor() as cur:
            await cur.execute(END, (ended, status.value, attributes_json(attributes), span_id))

    async def latest_run_span(self, conversation_id: str) -> SpanRecord | None:
        async with self.db.cursor() as cur:
            await cur.execute(LATEST, (conversation_id,))
            row = await cur.fetchone()
        return span_of(_row(row)) if row else None

    async def claim(self, owner: str, now: float, lease: float, limit: int) -> Sequence[PendingSpan]:
        async with self.db.cursor() as cur:
            await cur.execute(CLAIM, (now, limit, now + lease))
            rows = await cur.fetchall()
        return [pending_of(_row(r)) for r in rows]

    async def acknowledge(self, span_ids: Sequence[str]) -> None:
        async with self.db.cursor() as cur:
            await cur.execute("UPDATE trace_spans SET acked = true WHERE span_id = ANY(%s)", (list(span_ids),))

    async def prune(self, before: int) -> int:
        async with self.db.cursor() as cur:
            await cur.execute("DELETE FROM trace_spans WHERE acked AND started < %s", (before,))
            return int(cur.rowcount)

    async def unacknowledged(self) -> int:
        async with self.db.cursor() as cur:
            await cur.execute("SELECT count(*) FROM trace_spans WHERE NOT acked")
            row = await cur.fetchone()
        return int(row[0]) if row else 0
