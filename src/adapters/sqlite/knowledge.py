"""KnowledgeStore on the SQLite file, on the run store's writer and reader threads: each
write one transaction, committed (and synced) before it returns. Full-text search is FTS5's
BM25 over the passages' stems (knowledge_schema.py); deleting a collection or a file
cascades to its rows, whose triggers drop their index entries."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from adapters.sqlite.database import Worker, transaction
from adapters.storage.knowledge_text import passage_stems, search_stems
from domain.knowledge import Candidate, Chunk, Collection, KnowledgeFile
from domain.model import iso
from ports.knowledge import KnowledgeStore

COLLECTIONS = """
SELECT c.name, c.created_at, COUNT(f.id), COALESCE(SUM(f.passages), 0)
FROM knowledge_collections c LEFT JOIN knowledge_files f ON f.owner = c.owner AND f.collection = c.name
WHERE c.owner = ? GROUP BY c.name, c.created_at ORDER BY c.name
"""
FILE_COLUMNS = "name, digest, size, media_type, passages, updated_at"
# CROSS JOIN keeps the index's matches the outer loop (as the store's search: adapters/sqlite/store.py)
SEARCH = """
SELECT f.collection, f.name, k.first_line, k.last_line, k.body, -bm25(knowledge_fts)
FROM knowledge_fts CROSS JOIN knowledge_chunks k ON k.id = knowledge_fts.rowid CROSS JOIN knowledge_files f ON f.id = k.file_id
WHERE knowledge_fts MATCH ? AND f.owner = ? AND f.collection IN ({names})
ORDER BY bm25(knowledge_fts), k.id LIMIT ?
"""


def _file(row: Sequence[Any]) -> KnowledgeFile:
    return KnowledgeFile(row[0], row[1], row[2], row[3], row[4], datetime.fromisoformat(row[5]))


class SqliteKnowledge(KnowledgeStore):
    def __init__(self, writer: Worker, reader: Worker) -> None:
        self._writer = writer
        self._reader = reader

    async def _write(self, sql: str, args: tuple[Any, ...]) -> int:
        def write(c: sqlite3.Connection) -> int:
            with transaction(c):
                return c.execute(sql, args).rowcount

        return await self._writer.run(write)

    async def _read(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        return await self._reader.run(lambda c: c.execute(sql, args).fetchall())

    async def create(self, owner: str, name: str, now: datetime) -> bool:
        sql = "INSERT INTO knowledge_collections (owner, name, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"
        return await self._write(sql, (owner, name, iso(now))) > 0

    async def collections(self, owner: str) -> Sequence[Collection]:
        rows = await self._read(COLLECTIONS, (owner,))
        return [Collection(r[0], r[2], r[3], datetime.fromisoformat(r[1])) for r in rows]

    async def drop(self, owner: str, name: str) -> bool:
        return await self._write("DELETE FROM knowledge_collections WHERE owner = ? AND name = ?", (owner, name)) > 0

    async def files(self, owner: str, name: str) -> Sequence[KnowledgeFile] | None:
        def read(c: sqlite3.Connection) -> list[Any] | None:
            if c.execute("SELECT 1 FROM knowledge_collections WHERE owner = ? AND name = ?", (owner, name)).fetchone() is None:
                return None
            sql = f"SELECT {FILE_COLUMNS} FROM knowledge_files WHERE owner = ? AND collection = ? ORDER BY name"
            return c.execute(sql, (owner, name)).fetchall()

        rows = await self._reader.run(read)
        return None if rows is None else [_file(r) for r in rows]

    async def put_file(self, owner: str, name: str, file: KnowledgeFile, chunks: Sequence[Chunk]) -> bool:
        rows = [(c.first, c.last, c.text, passage_stems(c.text)) for c in chunks]
        meta = (file.digest, file.size, file.media_type, len(chunks), iso(file.updated_at))

        def write(c: sqlite3.Connection) -> bool:
            with transaction(c):
                if (
                    c.execute("SELECT 1 FROM knowledge_collections WHERE owner = ? AND name = ?", (owner, name)).fetchone()
                    is None
                ):
                    return False
                # the old file's passages go with it (cascade; their triggers drop the index entries)
                c.execute("DELETE FROM knowledge_files WHERE owner = ? AND collection = ? AND name = ?", (owner, name, file.name))
                cur = c.execute(
                    "INSERT INTO knowledge_files (owner, collection, name, digest, size, media_type, passages, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (owner, name, file.name, *meta),
                )
                c.executemany(
                    "INSERT INTO knowledge_chunks (file_id, first_line, last_line, body, stems) VALUES (?, ?, ?, ?, ?)",
                    [(cur.lastrowid, *r) for r in rows],
                )
                return True

        return await self._writer.run(write)

    async def delete_file(self, owner: str, name: str, file: str) -> bool:
        sql = "DELETE FROM knowledge_files WHERE owner = ? AND collection = ? AND name = ?"
        return await self._write(sql, (owner, name, file)) > 0

    async def chunks(self, owner: str, name: str, file: str) -> Sequence[Chunk] | None:
        def read(c: sqlite3.Connection) -> list[Any] | None:
            found = c.execute(
                "SELECT id FROM knowledge_files WHERE owner = ? AND collection = ? AND name = ?", (owner, name, file)
            ).fetchone()
            if found is None:
                return None
            sql = "SELECT first_line, last_line, body FROM knowledge_chunks WHERE file_id = ? ORDER BY id"
            return c.execute(sql, (found[0],)).fetchall()

        rows = await self._reader.run(read)
        return None if rows is None else [Chunk(*r) for r in rows]

    async def search(self, owner: str, names: Sequence[str], query: str, limit: int) -> Sequence[Candidate]:
        words = search_stems(query)
        wanted = list(dict.fromkeys(names))
        if not words or not wanted:
            return []
        sql = SEARCH.format(names=", ".join("?" * len(wanted)))
        terms = " OR ".join(f'"{w}"' for w in words)
        rows = await self._read(sql, (terms, owner, *wanted, limit))
        return [Candidate(*r) for r in rows]

    async def drop_all(self, owner: str) -> int:
        return await self._write("DELETE FROM knowledge_collections WHERE owner = ?", (owner,))
