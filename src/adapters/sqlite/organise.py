"""Titles, pins, the archive, temporary chats and turn counts on the SQLite file (ports.runs):
the part of the run store that organises conversations; each write one statement on the
writer thread (no fsync: none of it is something a crash may not take back)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from adapters.sqlite.database import Worker, transaction, unsynced
from adapters.sqlite.rows import fetchall, marks
from domain.model import TitleSource, iso
from domain.organise import Organise, Shown

LEFT = 2  # conversations.temporary: temporary, and left by its page

ABANDONED = """
SELECT c.id FROM conversations c
WHERE c.temporary <> 0 AND (c.temporary = 2 OR c.updated_at < ?)
  AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.conversation_id = c.id AND r.status = 'running')
"""


def shown_sql(shown: Shown) -> tuple[str, list[object]]:
    """The conditions (after WHERE ... AND) that keep what `shown` names; never a temporary one."""
    sql, args = " AND c.temporary = 0", list[object]()
    if shown.archived is not None:
        sql += " AND c.archived = ?"
        args.append(int(shown.archived))
    if shown.pinned is not None:
        sql += " AND c.pinned = ?"
        args.append(int(shown.pinned))
    return sql, args


class SqliteOrganising:
    _writer: Worker
    _reader: Worker

    async def _write(self, sql: str, args: Sequence[object]) -> bool:
        def write(c: sqlite3.Connection) -> bool:
            with unsynced(c), transaction(c):
                return c.execute(sql, args).rowcount > 0

        return await self._writer.run(write)

    async def retitle(self, conversation_id: str, title: str, source: TitleSource) -> bool:
        return await self._write(
            "UPDATE conversations SET title = ?, title_by = ? WHERE id = ? AND title_by = ?",
            (title, source.value, conversation_id, TitleSource.MESSAGE.value),
        )

    async def organise(self, conversation_id: str, change: Organise) -> bool:
        return await self._write(
            "UPDATE conversations SET pinned = coalesce(?, pinned), archived = coalesce(?, archived) WHERE id = ?",
            (
                None if change.pinned is None else int(change.pinned),
                None if change.archived is None else int(change.archived),
                conversation_id,
            ),
        )

    async def set_turns(self, conversation_id: str, turns: int) -> bool:
        return await self._write("UPDATE conversations SET turns = ? WHERE id = ?", (turns, conversation_id))

    async def leave_temporary(self, conversation_id: str) -> bool:
        return await self._write(
            "UPDATE conversations SET temporary = ? WHERE id = ? AND temporary <> 0", (LEFT, conversation_id)
        )

    async def abandoned(self, idle_since: datetime) -> Sequence[str]:
        rows: list[tuple[Any, ...]] = await self._reader.run(fetchall, ABANDONED, (iso(idle_since),))
        return [str(r[0]) for r in rows]

    async def temporary_among(self, conversation_ids: Sequence[str]) -> set[str]:
        ids = list(dict.fromkeys(conversation_ids))[:999]  # SQLite's bound on parameters
        if not ids:
            return set()
        sql = f"SELECT id FROM conversations WHERE temporary <> 0 AND id IN ({marks(ids)})"
        rows: list[tuple[Any, ...]] = await self._reader.run(fetchall, sql, ids)
        return {str(r[0]) for r in rows}
