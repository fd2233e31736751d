"""SpanStore on the SQLite file, on the run store's writer and reader threads. A claim is
a write transaction (BEGIN IMMEDIATE): the file's one writer at a time, so two processes on
the file never claim the same span within a lease. Spans are committed without an fsync
(database.unsynced): a kill -9 loses none of them (the WAL is in the system's cache), and the
next synced commit on the file (the tool journal's "about to call", right after a tool span;
the step's checkpoint, after a model call) makes them durable against a power cut too."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from adapters.sqlite.database import Worker, transaction, unsynced
from adapters.sqlite.rows import fetchall
from adapters.storage.span_rows import COLUMNS, attributes_json, pending_of, span_of, span_row
from domain.traces import Attribute, PendingSpan, SpanRecord, SpanStatus
from ports.traces import SpanStore

RECORD = f"INSERT INTO trace_spans ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (span_id) DO NOTHING"
# json_patch merges the end's attributes into the start's
END = """
UPDATE trace_spans SET ended = ?, status = ?, attributes = json_patch(attributes, ?)
WHERE span_id = ? AND ended IS NULL AND acked = 0
"""
SPAN_COLUMNS = ", ".join(f"s.{c.strip()}" for c in COLUMNS.split(","))
READY = f"""
SELECT {SPAN_COLUMNS}, r.status, r.finished_at FROM trace_spans s LEFT JOIN runs r ON r.id = s.run_id
WHERE s.acked = 0 AND s.claimed_until <= ?
  AND (r.status IS NULL OR r.status != 'running' OR (s.kind != 'agent' AND s.ended IS NOT NULL))
ORDER BY s.rowid LIMIT ?
"""
LATEST = (
    f"SELECT {COLUMNS} FROM trace_spans WHERE conversation_id = ? AND kind = 'agent' ORDER BY started DESC, rowid DESC LIMIT 1"
)


class SqliteSpanStore(SpanStore):
    def __init__(self, writer: Worker, reader: Worker) -> None:
        self._writer = writer
        self._reader = reader

    async def record(self, spans: Sequence[SpanRecord]) -> None:
        def write(c: sqlite3.Connection) -> None:
            with unsynced(c), transaction(c):
                c.executemany(RECORD, [span_row(s) for s in spans])

        await self._writer.run(write)

    async def end(self, span_id: str, ended: int, status: SpanStatus, attributes: dict[str, Attribute]) -> None:
        def write(c: sqlite3.Connection) -> None:
            with unsynced(c), transaction(c):
                c.execute(END, (ended, status.value, attributes_json(attributes), span_id))

        await self._writer.run(write)

    async def latest_run_span(self, conversation_id: str) -> SpanRecord | None:
        found = await self._reader.run(fetchall, LATEST, (conversation_id,))
        return span_of(found[0]) if found else None

    async def claim(self, owner: str, now: float, lease: float, limit: int) -> Sequence[PendingSpan]:
        def write(c: sqlite3.Connection) -> list[PendingSpan]:
            with transaction(c):
                rows = c.execute(READY, (now, limit)).fetchall()
                ids = [(now + lease, r[0]) for r in rows]
                c.executemany("UPDATE trace_spans SET claimed_until = ? WHERE span_id = ?", ids)
            return [pending_of(r) for r in rows]

        return await self._writer.run(write)

    async def acknowledge(self, span_ids: Sequence[str]) -> None:
        def write(c: sqlite3.Connection) -> None:
            with transaction(c):
                c.executemany("UPDATE trace_spans SET acked = 1 WHERE span_id = ?", [(s,) for s in span_ids])

        await self._writer.run(write)

    async def prune(self, before: int) -> int:
        def write(c: sqlite3.Connection) -> int:
            with transaction(c):
                return int(c.execute("DELETE FROM trace_spans WHERE acked = 1 AND started < ?", (before,)).rowcount)

        return await self._writer.run(write)

    async def unacknowledged(self) -> int:
        ((count,),) = await self._reader.run(fetchall, "SELECT count(*) FROM trace_spans WHERE acked = 0", ())
        return int(count)
