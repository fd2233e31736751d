"""KnowledgeStore on PostgreSQL, on the backend's pool: each write one transaction,
committed before it returns. Full-text search is `ts_rank` (normalised by the passage's
length) over the passages' stems as a tsvector (knowledge_schema.py); deleting a collection
or a file cascades to its rows."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from adapters.postgres.database import PostgresDatabase
from adapters.storage.knowledge_text import passage_stems, search_stems
from domain.knowledge import Candidate, Chunk, Collection, KnowledgeFile
from ports.knowledge import KnowledgeStore

COLLECTIONS = """
SELECT c.name, c.created_at, COUNT(f.id), COALESCE(SUM(f.passages), 0)
FROM knowledge_collections c LEFT JOIN knowledge_files f ON f.owner = c.owner AND f.collection = c.name
WHERE c.owner = %s GROUP BY c.name, c.created_at ORDER BY c.name COLLATE "C"
"""
FILE_COLUMNS = "name, digest, size, media_type, passages, updated_at"
SEARCH = """
SELECT f.collection, f.name, k.first_line, k.last_line, k.body, ts_rank(k.stems, q, 1) AS score
FROM knowledge_chunks k JOIN knowledge_files f ON f.id = k.file_id, to_tsquery('simple', %s) q
WHERE k.stems @@ q AND f.owner = %s AND f.collection = ANY(%s)
ORDER BY score DESC, k.id LIMIT %s
"""


class PostgresKnowledge(KnowledgeStore):
    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    async def _write(self, sql: str, args: tuple[Any, ...]) -> int:
        async with self.db.cursor() as cur:
            await cur.execute(sql, args)
            return cur.rowcount

    async def create(self, owner: str, name: str, now: datetime) -> bool:
        sql = "INSERT INTO knowledge_collections (owner, name, created_at) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"
        return await self._write(sql, (owner, name, now)) > 0

    async def collections(self, owner: str) -> Sequence[Collection]:
        async with self.db.cursor() as cur:
            await cur.execute(COLLECTIONS, (owner,))
            return [Collection(r[0], r[2], int(r[3]), r[1]) for r in await cur.fetchall()]

    async def drop(self, owner: str, name: str) -> bool:
        return await self._write("DELETE FROM knowledge_collections WHERE owner = %s AND name = %s", (owner, name)) > 0

    async def files(self, owner: str, name: str) -> Sequence[KnowledgeFile] | None:
        async with self.db.cursor() as cur:
            await cur.execute("SELECT 1 FROM knowledge_collections WHERE owner = %s AND name = %s", (owner, name))
            if await cur.fetchone() is None:
                return None
            sql = f'SELECT {FILE_COLUMNS} FROM knowledge_files WHERE owner = %s AND collection = %s ORDER BY name COLLATE "C"'
            await cur.execute(sql.encode(), (owner, name))
            return [KnowledgeFile(*r) for r in await cur.fetchall()]

    async def put_file(self, owner: str, name: str, file: KnowledgeFile, chunks: Sequence[Chunk]) -> bool:
        rows = [(c.first, c.last, c.text, passage_stems(c.text)) for c in chunks]
        async with self.db.cursor(transaction=True) as cur:
            # the collection's row locked: a concurrent drop waits, or this finds it gone
            await cur.execute("SELECT 1 FROM knowledge_collections WHERE owner = %s AND name = %s FOR SHARE", (owner, name))
            if await cur.fetchone() is None:
                return False
            await cur.execute(
                "DELETE FROM knowledge_files WHERE owner = %s AND collection = %s AND name = %s", (owner, name, file.name)
            )
            await cur.execute(
                "INSERT INTO knowledge_files (owner, collection, name, digest, size, media_type, passages, updated_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (owner, name, file.name, file.digest, file.size, file.media_type, len(chunks), file.updated_at),
            )
            row = await cur.fetchone()
            assert row is not None
            await cur.executemany(
                "INSERT INTO knowledge_chunks (file_id, first_line, last_line, body, stems) "
                "VALUES (%s, %s, %s, %s, to_tsvector('simple', %s))",
                [(row[0], *r) for r in rows],
            )
            return True

    async def delete_file(self, owner: str, name: str, file: str) -> bool:
        sql = "DELETE FROM knowledge_files WHERE owner = %s AND collection = %s AND name = %s"
        return await self._write(sql, (owner, name, file)) > 0

    async def chunks(self, owner: str, name: str, file: str) -> Sequence[Chunk] | None:
        async with self.db.cursor() as cur:
            sql = "SELECT id FROM knowledge_files WHERE owner = %s AND collection = %s AND name = %s"
            await cur.execute(sql, (owner, name, file))
            found = await cur.fetchone()
            if found is None:
                return None
            await cur.execute(
                "SELECT first_line, last_line, body FROM knowledge_chunks WHERE file_id = %s ORDER BY id", (found[0],)
            )
            return [Chunk(*r) for r in await cur.fetchall()]

    async def search(self, owner: str, names: Sequence[str], query: str, limit: int) -> Sequence[Candidate]:
        words = search_stems(query)
        wanted = list(dict.fromkeys(names))
        if not words or not wanted:
            return []
        tsquery = " | ".join("'" + w.replace("'", "''") + "'" for w in words)
        async with self.db.cursor() as cur:
            await cur.execute(SEARCH, (tsquery, owner, wanted, limit))
            return [Candidate(r[0], r[1], r[2], r[3], r[4], float(r[5])) for r in await cur.fetchall()]

    async def drop_all(self, owner: str) -> int:
        return await self._write("DELETE FROM knowledge_collections WHERE owner = %s", (owner,))
