"""AssistantStore on PostgreSQL: an assistant made or changed through one process is every
process's. A user's new assistants are counted under an advisory lock (two racing cannot
pass the limit together); an update locks the assistant's row, so two updates make two
versions, one after the other."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from psycopg import AsyncCursor
from psycopg.types.json import Jsonb

from adapters.postgres.database import ASSISTANT_LOCK, PostgresDatabase
from domain.assistants import Assistant, AssistantExists, AssistantPatch, TooManyAssistants
from ports.assistants import AssistantStore

FIELDS = "graph_id, name, description, config, context, metadata"
COLUMNS = f"assistant_id, owner, version, {FIELDS}, created_at, updated_at"
SEES = "(%(viewer)s::text IS NULL OR owner IS NULL OR owner = %(viewer)s)"


def assistant_from_row(row: Sequence[Any]) -> Assistant:
    aid, owner, version, graph, name, description, config, context, metadata, created, updated = row
    return Assistant(aid, graph, name, config, context, metadata, version, created, updated, description, owner)


def _fields(a: Assistant) -> tuple[Any, ...]:
    return (a.graph_id, a.name, a.description, Jsonb(dict(a.config)), Jsonb(dict(a.context)), Jsonb(dict(a.metadata)))


async def _insert_version(cur: AsyncCursor[Any], a: Assistant, at: datetime) -> None:
    await cur.execute(
        f"INSERT INTO assistant_versions (assistant_id, version, {FIELDS}, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (a.assistant_id, a.version, *_fields(a), at),
    )


async def _owned(cur: AsyncCursor[Any], assistant_id: str, owner: str | None) -> Assistant | None:
    await cur.execute(
        f"SELECT {COLUMNS} FROM assistants WHERE assistant_id = %s AND owner IS NOT DISTINCT FROM %s FOR UPDATE",
        (assistant_id, owner),
    )
    row = await cur.fetchone()
    return assistant_from_row(row) if row else None


async def _write_latest(cur: AsyncCursor[Any], a: Assistant) -> None:
    await cur.execute(
        "UPDATE assistants SET version = %s, graph_id = %s, name = %s, description = %s, config = %s, context = %s, "
        "metadata = %s, updated_at = %s WHERE assistant_id = %s",
        (a.version, *_fields(a), a.updated_at, a.assistant_id),
    )


class PostgresAssistantStore(AssistantStore):
    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    async def create(self, assistant: Assistant, limit: int) -> None:
        a = assistant
        async with self.db.cursor(transaction=True) as cur:
            if a.owner is not None:
                await cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (ASSISTANT_LOCK, a.owner))
                await cur.execute("SELECT count(*) FROM assistants WHERE owner = %s", (a.owner,))
                row = await cur.fetchone()
                if row is not None and row[0] >= limit:
                    raise TooManyAssistants()
            await cur.execute(
                f"INSERT INTO assistants ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (assistant_id) DO NOTHING RETURNING assistant_id",
                (a.assistant_id, a.owner, a.version, *_fields(a), a.created_at, a.updated_at),
            )
            if await cur.fetchone() is None:
                raise AssistantExists()
            await _insert_version(cur, a, a.created_at)

    async def get(self, assistant_id: str, viewer: str | None) -> Assistant | None:
        async with self.db.cursor() as cur:
            await cur.execute(
                f"SELECT {COLUMNS} FROM assistants WHERE assistant_id = %(aid)s AND {SEES}",
                {"aid": assistant_id, "viewer": viewer},
            )
            row = await cur.fetchone()
        return assistant_from_row(row) if row else None

    async def assistants(self, viewer: str | None, graph_ids: Sequence[str]) -> Sequence[Assistant]:
        async with self.db.cursor() as cur:
            await cur.execute(
                f"SELECT {COLUMNS} FROM assistants WHERE {SEES} AND graph_id = ANY(%(graphs)s)",
                {"viewer": viewer, "graphs": list(graph_ids)},
            )
            return [assistant_from_row(r) for r in await cur.fetchall()]

    async def update(
        self, assistant_id: str, owner: str | None, patch: AssistantPatch, now: datetime, limit: int
    ) -> Assistant | None:
        async with self.db.cursor(transaction=True) as cur:
            current = await _owned(cur, assistant_id, owner)
            if current is None:
                return None
            await cur.execute("SELECT count(*), max(version) FROM assistant_versions WHERE assistant_id = %s", (assistant_id,))
            row = await cur.fetchone()
            count, top = row if row is not None else (0, None)
            if count >= limit:
                raise TooManyAssistants()
            new = patch.applied(current, (top or 0) + 1, now)
            await _insert_version(cur, new, now)
            await _write_latest(cur, new)
            return new

    async def delete(self, assistant_id: str, owner: str | None) -> bool:
        async with self.db.cursor(transaction=True) as cur:
            if await _owned(cur, assistant_id, owner) is None:
                return False
            await cur.execute("DELETE FROM assistant_versions WHERE assistant_id = %s", (assistant_id,))
            await cur.execute("DELETE FROM assistants WHERE assistant_id = %s", (assistant_id,))
            return True

    async def versions(self, assistant_id: str, viewer: str | None) -> Sequence[Assistant]:
        async with self.db.cursor() as cur:
            await cur.execute(
                "SELECT v.assistant_id, a.owner, v.version, v.graph_id, v.name, v.description, v.config, v.context, v.metadata, "
                "v.created_at, v.created_at FROM assistant_versions v JOIN assistants a USING (assistant_id) "
                "WHERE v.assistant_id = %(aid)s AND (%(viewer)s::text IS NULL OR a.owner IS NULL OR a.owner = %(viewer)s) "
                "ORDER BY v.version DESC",
                {"aid": assistant_id, "viewer": viewer},
            )
            return [assistant_from_row(r) for r in await cur.fetchall()]

    async def set_latest(self, assistant_id: str, owner: str | None, version: int, now: datetime) -> Assistant | None:
        async with self.db.cursor(transaction=True) as cur:
            current = await _owned(cur, assistant_id, owner)
            await cur.execute(
                f"SELECT {FIELDS} FROM assistant_versions WHERE assistant_id = %s AND version = %s", (assistant_id, version)
            )
            row = await cur.fetchone()
            if current is None or row is None:
                return None
            graph, name, description, config, context, metadata = row
            latest = Assistant(
                assistant_id, graph, name, config, context, metadata, version, current.created_at, now, description, owner
            )
            await _write_latest(cur, latest)
            return latest
