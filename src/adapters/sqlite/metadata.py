"""A LangGraph thread's metadata and the keyword arguments of its runs (the stream modes a
second client's join streams) on the SQLite file: a mixin of SqliteRunStore, on its writer
and reader."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from adapters.sqlite.database import Worker, transaction, unsynced
from adapters.sqlite.rows import fetchall, marks


class SqliteThreadMetadata:
    _writer: Worker
    _reader: Worker

    async def _read(self, sql: str, args: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        return await self._reader.run(fetchall, sql, args)

    async def thread_metadata(self, conversation_ids: Sequence[str]) -> Mapping[str, Mapping[str, Any]]:
        found: dict[str, Mapping[str, Any]] = {}
        ids = list(dict.fromkeys(conversation_ids))
        for start in range(0, len(ids), 500):  # SQLite bounds the number of parameters
            chunk = ids[start : start + 500]
            rows = await self._read(
                f"SELECT conversation_id, metadata FROM thread_metadata WHERE conversation_id IN ({marks(chunk)})",
                chunk,
            )
            found.update((r[0], json.loads(r[1])) for r in rows)
        return found

    async def merge_thread_metadata(self, conversation_id: str, metadata: Mapping[str, Any]) -> bool:
        def write(c: sqlite3.Connection) -> bool:
            with transaction(c):
                if c.execute("SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)).fetchone() is None:
                    return False
                row = c.execute("SELECT metadata FROM thread_metadata WHERE conversation_id = ?", (conversation_id,)).fetchone()
                merged = {**(json.loads(row[0]) if row else {}), **metadata}
                c.execute(
                    "INSERT INTO thread_metadata (conversation_id, metadata) VALUES (?, ?) "
                    "ON CONFLICT (conversation_id) DO UPDATE SET metadata = excluded.metadata",
                    (conversation_id, json.dumps(merged, ensure_ascii=False)),
                )
            return True

        return await self._writer.run(write)

    async def run_kwargs(self, conversation_id: str, run_id: str, owner: str | None = None) -> Mapping[str, Any] | None:
        rows = await self._read(
            "SELECT k.kwargs FROM run_kwargs k JOIN conversations c ON c.id = k.conversation_id "
            "WHERE k.run_id = ? AND k.conversation_id = ? AND (? IS NULL OR c.owner = ?)",
            (run_id, conversation_id, owner, owner),
        )
        return json.loads(rows[0][0]) if rows else None

    async def set_run_kwargs(
        self, conversation_id: str, run_id: str, kwargs: Mapping[str, Any], owner: str | None = None
    ) -> bool:
        def write(c: sqlite3.Connection) -> bool:
            # unsynced: a power cut may lose them, and a join then streams the default modes
            with unsynced(c), transaction(c):
                cur = c.execute(
                    "INSERT INTO run_kwargs (run_id, conversation_id, kwargs) SELECT ?, id, ? FROM conversations "
                    "WHERE id = ? AND (? IS NULL OR owner = ?) ON CONFLICT (run_id) DO UPDATE SET kwargs = excluded.kwargs",
                    (run_id, json.dumps(kwargs, ensure_ascii=False), conversation_id, owner, owner),
                )
            return cur.rowcount > 0

        return await self._writer.run(write)
