"""Titles, pins, the archive, temporary chats and turn counts on PostgreSQL (ports.runs):
the part of the run store that organises conversations, each write one statement."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from adapters.postgres.database import PostgresDatabase
from adapters.postgres.search import index_title
from domain.model import TitleSource
from domain.organise import Organise, Shown

LEFT = 2  # conversations.temporary: temporary, and left by its page

ABANDONED = """
SELECT c.id FROM conversations c
WHERE c.temporary <> 0 AND (c.temporary = 2 OR c.updated_at < %s)
  AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.conversation_id = c.id AND r.status = 'running')
"""


def shown_sql(shown: Shown) -> tuple[list[str], list[object]]:
    """The conditions that keep what `shown` names; never a temporary conversation."""
    where, args = ["c.temporary = 0"], list[object]()
    if shown.archived is not None:
        where.append("c.archived = %s")
        args.append(shown.archived)
    if shown.pinned is not None:
        where.append("c.pinned = %s")
        args.append(shown.pinned)
    return where, args


class PostgresOrganising:
    db: PostgresDatabase

    async def _rows(self, sql: str, args: Sequence[object] | Mapping[str, object] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError  # the run store's

    async def ready(self) -> None:
        raise NotImplementedError  # the run store's

    async def retitle(self, conversation_id: str, title: str, source: TitleSource) -> bool:
        await self.ready()
        async with self.db.cursor(transaction=True) as cur:
            await cur.execute(
                "UPDATE conversations SET title = %s, title_by = %s WHERE id = %s AND title_by = %s RETURNING id",
                (title, source.value, conversation_id, TitleSource.MESSAGE.value),
            )
            if await cur.fetchone() is None:
                return False
            await index_title(cur, conversation_id, title)
        return True

    async def organise(self, conversation_id: str, change: Organise) -> bool:
        return bool(
            await self._rows(
                "UPDATE conversations SET pinned = coalesce(%s, pinned), archived = coalesce(%s, archived) "
                "WHERE id = %s RETURNING id",
                (change.pinned, change.archived, conversation_id),
            )
        )

    async def set_turns(self, conversation_id: str, turns: int) -> bool:
        return bool(await self._rows("UPDATE conversations SET turns = %s WHERE id = %s RETURNING id", (turns, conversation_id)))

    async def leave_temporary(self, conversation_id: str) -> bool:
        return bool(
            await self._rows(
                "UPDATE conversations SET temporary = %s WHERE id = %s AND temporary <> 0 RETURNING id", (LEFT, conversation_id)
            )
        )

    async def abandoned(self, idle_since: datetime) -> Sequence[str]:
        return [str(r[0]) for r in await self._rows(ABANDONED, (idle_since,))]

    async def temporary_among(self, conversation_ids: Sequence[str]) -> set[str]:
        if not conversation_ids:
            return set()
        rows = await self._rows("SELECT id FROM conversations WHERE temporary <> 0 AND id = ANY(%s)", (list(conversation_ids),))
        return {str(r[0]) for r in rows}
