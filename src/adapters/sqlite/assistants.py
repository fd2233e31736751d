"""AssistantStore on the SQLite file, on the run store's writer and reader threads: each
write is one transaction, committed before it returns."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from adapters.sqlite.database import Worker, transaction
from adapters.sqlite.rows import fetchall, marks
from domain.assistants import Assistant, AssistantExists, AssistantPatch, TooManyAssistants
from domain.model import iso
from ports.assistants import AssistantStore

FIELDS = "graph_id, name, description, config, context, metadata"
COLUMNS = f"assistant_id, owner, version, {FIELDS}, created_at, updated_at"
SEES = "(? IS NULL OR owner IS NULL OR owner = ?)"


def assistant_from_row(row: Sequence[Any]) -> Assistant:
    aid, owner, version, graph, name, description, config, context, metadata, created, updated = row
    return Assistant(
        aid,
        graph,
        name,
        json.loads(config),
        json.loads(context),
        json.loads(metadata),
        version,
        datetime.fromisoformat(created),
        datetime.fromisoformat(updated),
        description,
        owner,
    )


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _fields(a: Assistant) -> tuple[Any, ...]:
    return (a.graph_id, a.name, a.description, _dump(a.config), _dump(a.context), _dump(a.metadata))


def _insert_version(c: sqlite3.Connection, a: Assistant, at: datetime) -> None:
    c.execute(
        f"INSERT INTO assistant_versions (assistant_id, version, {FIELDS}, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (a.assistant_id, a.version, *_fields(a), iso(at)),
    )


def _owned(c: sqlite3.Connection, assistant_id: str, owner: str | None) -> Assistant | None:
    row = c.execute(f"SELECT {COLUMNS} FROM assistants WHERE assistant_id = ? AND owner IS ?", (assistant_id, owner)).fetchone()
    return assistant_from_row(row) if row else None


def _write_latest(c: sqlite3.Connection, a: Assistant) -> None:
    c.execute(
        "UPDATE assistants SET version = ?, graph_id = ?, name = ?, description = ?, config = ?, context = ?, metadata = ?, "
        "updated_at = ? WHERE assistant_id = ?",
        (a.version, *_fields(a), iso(a.updated_at), a.assistant_id),
    )


class SqliteAssistantStore(AssistantStore):
    def __init__(self, writer: Worker, reader: Worker) -> None:
        self._writer = writer
        self._reader = reader

    async def create(self, assistant: Assistant, limit: int) -> None:
        a = assistant

        def write(c: sqlite3.Connection) -> None:
            with transaction(c):
                if c.execute("SELECT 1 FROM assistants WHERE assistant_id = ?", (a.assistant_id,)).fetchone():
                    raise AssistantExists()
                if a.owner is not None:
                    (owned,) = c.execute("SELECT count(*) FROM assistants WHERE owner = ?", (a.owner,)).fetchone()
                    if owned >= limit:
                        raise TooManyAssistants()
                c.execute(
                    f"INSERT INTO assistants ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (a.assistant_id, a.owner, a.version, *_fields(a), iso(a.created_at), iso(a.updated_at)),
                )
                _insert_version(c, a, a.created_at)

        await self._writer.run(write)

    async def get(self, assistant_id: str, viewer: str | None) -> Assistant | None:
        sql = f"SELECT {COLUMNS} FROM assistants WHERE assistant_id = ? AND {SEES}"
        rows = await self._reader.run(fetchall, sql, (assistant_id, viewer, viewer))
        return assistant_from_row(rows[0]) if rows else None

    async def assistants(self, viewer: str | None, graph_ids: Sequence[str]) -> Sequence[Assistant]:
        if not graph_ids:
            return []
        sql = f"SELECT {COLUMNS} FROM assistants WHERE {SEES} AND graph_id IN ({marks(graph_ids)})"
        return [assistant_from_row(r) for r in await self._reader.run(fetchall, sql, (viewer, viewer, *graph_ids))]

    async def update(
        self, assistant_id: str, owner: str | None, patch: AssistantPatch, now: datetime, limit: int
    ) -> Assistant | None:
        def write(c: sqlite3.Connection) -> Assistant | None:
            with transaction(c):
                current = _owned(c, assistant_id, owner)
                if current is None:
                    return None
                count, top = c.execute(
                    "SELECT count(*), max(version) FROM assistant_versions WHERE assistant_id = ?", (assistant_id,)
                ).fetchone()
                if count >= limit:
                    raise TooManyAssistants()
                new = patch.applied(current, (top or 0) + 1, now)
                _insert_version(c, new, now)
                _write_latest(c, new)
                return new

        return await self._writer.run(write)

    async def delete(self, assistant_id: str, owner: str | None) -> bool:
        def write(c: sqlite3.Connection) -> bool:
            with transaction(c):
                if _owned(c, assistant_id, owner) is None:
                    return False
                c.execute("DELETE FROM assistant_versions WHERE assistant_id = ?", (assistant_id,))
                c.execute("DELETE FROM assistants WHERE assistant_id = ?", (assistant_id,))
                return True

        return await self._writer.run(write)

    async def versions(self, assistant_id: str, viewer: str | None) -> Sequence[Assistant]:
        sql = (
            "SELECT v.assistant_id, a.owner, v.version, v.graph_id, v.name, v.description, v.config, v.context, "
            "v.metadata, v.created_at, v.created_at FROM assistant_versions v JOIN assistants a USING (assistant_id) "
            "WHERE v.assistant_id = ? AND (? IS NULL OR a.owner IS NULL OR a.owner = ?) ORDER BY v.version DESC"
        )
        return [assistant_from_row(r) for r in await self._reader.run(fetchall, sql, (assistant_id, viewer, viewer))]

    async def set_latest(self, assistant_id: str, owner: str | None, version: int, now: datetime) -> Assistant | None:
        def write(c: sqlite3.Connection) -> Assistant | None:
            with transaction(c):
                current = _owned(c, assistant_id, owner)
                row = c.execute(
                    f"SELECT {FIELDS} FROM assistant_versions WHERE assistant_id = ? AND version = ?", (assistant_id, version)
                ).fetchone()
                if current is None or row is None:
                    return None
                graph, name, description, config, context, metadata = row
                latest = Assistant(
                    assistant_id,
                    graph,
                    name,
                    json.loads(config),
                    json.loads(context),
                    json.loads(metadata),
                    version,
                    current.created_at,
                    now,
                    description,
                    owner,
                )
                _write_latest(c, latest)
                return latest

        return await self._writer.run(write)
