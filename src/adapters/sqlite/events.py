"""The run event log, cancel requests and the tool journal on the SQLite file: the part of
the run store that processes use to follow, stop and account for each other's runs."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from adapters.sqlite.database import Worker, transaction, unsynced
from adapters.sqlite.rows import AGO, NOW, fetchall, marks
from adapters.storage.event_rows import pack, unpack
from adapters.storage.wakeups import Wakeups
from domain.errors import RunLost
from domain.model import iso
from ports.events import EventBatch, RunEventLog
from ports.journal import JournalEntry, ToolJournal
from ports.signals import RunSignals


class SqliteRunEvents(RunEventLog, RunSignals, ToolJournal):
    """Shared by SqliteRunStore (which opens the connections): writes go to the writer
    thread, reads to the reader, both set up by the store."""

    _writer: Worker
    _reader: Worker
    _wakeups: Wakeups
    poll_interval: float

    async def _read(self, sql: str, args: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        return await self._reader.run(fetchall, sql, args)

    # --- RunEventLog ---------------------------------------------------------------------

    async def append(self, batches: Mapping[str, EventBatch]) -> None:
        rows = [(rid, seq, name, json.dumps(data)) for rid, batch in batches.items() for seq, name, data in pack(batch)]
        if not rows:
            return
        ids = list(batches)

        def write(c: sqlite3.Connection) -> None:
            # Events are a replay aid for followers, not the durable record (checkpoints and
            # outcomes are, and the terminal event is written with the outcome): they skip
            # the fsync per commit, which costs ~2 ms against ~30 µs. WAL stays consistent;
            # a power cut may lose the last events, never corrupt the file.
            with unsynced(c), transaction(c):
                live = {
                    r[0]
                    for r in c.execute(f"SELECT id FROM runs WHERE status = 'running' AND id IN ({marks(ids)})", ids).fetchall()
                }
                c.executemany(
                    "INSERT OR IGNORE INTO run_events (run_id, seq, event, data) VALUES (?, ?, ?, ?)",
                    [r for r in rows if r[0] in live],
                )

        await self._writer.run(write)
        self._wakeups.wake(batches)

    async def read(self, run_id: str, after: int) -> EventBatch:
        rows = await self._read(
            "SELECT seq, event, data FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq",
            (run_id, after),
        )
        return unpack(((seq, event, json.loads(data)) for seq, event, data in rows), after)

    async def wait(self, run_id: str, after: int, timeout: float) -> EventBatch:
        return await self._wakeups.wait(run_id, lambda: self.read(run_id, after), timeout, self.poll_interval)

    async def prune(self, retention_seconds: float) -> int:
        sql = (
            "DELETE FROM run_events WHERE run_id IN (SELECT e.run_id FROM (SELECT DISTINCT run_id FROM run_events) e "
            f"JOIN runs r ON r.id = e.run_id WHERE r.status != 'running' AND r.finished_at < {AGO})"
        )

        def write(c: sqlite3.Connection) -> int:
            with transaction(c):
                return c.execute(sql, (retention_seconds,)).rowcount

        return await self._writer.run(write)

    # --- RunSignals ----------------------------------------------------------------------

    async def request_cancel(self, run_id: str) -> bool:
        def write(c: sqlite3.Connection) -> bool:
            with transaction(c):
                cur = c.execute(
                    f"UPDATE runs SET cancel_requested_at = coalesce(cancel_requested_at, {NOW}) "
                    "WHERE id = ? AND status = 'running'",
                    (run_id,),
                )
            return cur.rowcount > 0

        return await self._writer.run(write)

    async def cancel_requested(self, run_ids: Sequence[str]) -> set[str]:
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            return set()
        rows = await self._read(
            f"SELECT id FROM runs WHERE status = 'running' AND cancel_requested_at IS NOT NULL AND id IN ({marks(ids)})",
            ids,
        )
        return {r[0] for r in rows}

    # --- ToolJournal ---------------------------------------------------------------------

    async def call_started(
        self, key: str, conversation_id: str, run_id: str | None, tool: str, unsafe: bool, now: datetime
    ) -> None:
        def write(c: sqlite3.Connection) -> None:
            with transaction(c):
                if (
                    run_id is not None
                    and not c.execute("SELECT 1 FROM runs WHERE id = ? AND status = 'running'", (run_id,)).fetchone()
                ):
                    raise RunLost()
                c.execute(
                    "INSERT INTO tool_calls (key, conversation_id, run_id, tool, unsafe, started_at) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET attempts = attempts + 1, "
                    "run_id = excluded.run_id, started_at = excluded.started_at",
                    (key, conversation_id, run_id, tool, int(unsafe), iso(now)),
                )

        await self._writer.run(write)

    async def entries(self, keys: Iterable[str]) -> dict[str, JournalEntry]:
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        rows = await self._read(f"SELECT key, tool, unsafe, attempts FROM tool_calls WHERE key IN ({marks(wanted)})", wanted)
        return {r[0]: JournalEntry(r[0], r[1], bool(r[2]), r[3]) for r in rows}
