"""StorePort on the SQLite file, on the run store's writer and reader threads: a put is
committed (and synced, as every write of the file) before it returns. Full-text search is
FTS5 over the items' stems (store_schema.py); filters are domain.store.matches, in Python,
so every backend reads them alike."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from adapters.sqlite.database import Worker, transaction
from adapters.sqlite.vectors import to_blob
from adapters.storage.store_text import item_stems, query_stems
from domain.model import iso
from domain.ranking import Vector
from domain.store import (
    ListNamespaces,
    Namespace,
    PutItem,
    SearchItems,
    StoreItem,
    candidate_depth,
    expiry,
    fused_page,
    matches,
    namespace_key,
    namespace_of,
)
from ports.store import StorePort

COLUMNS = "i.namespace, i.key, i.value, i.created_at, i.updated_at"
LIVE = "(i.expires_at IS NULL OR i.expires_at > ?)"
UPSERT = """
INSERT INTO store_items (owner, namespace, key, value, stems, created_at, updated_at, ttl_minutes, expires_at,
    embedding, embedding_model)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (owner, namespace, key) DO UPDATE SET
    value = excluded.value, stems = excluded.stems, updated_at = excluded.updated_at,
    ttl_minutes = excluded.ttl_minutes, expires_at = excluded.expires_at,
    embedding = excluded.embedding, embedding_model = excluded.embedding_model
"""


def item_from_row(row: Sequence[Any], score: float | None = None) -> StoreItem:
    ns, key, value, created, updated = row[:5]
    return StoreItem(
        namespace_of(ns), key, json.loads(value), datetime.fromisoformat(created), datetime.fromisoformat(updated), score
    )


def prefix_range(prefix: Namespace) -> tuple[str, tuple[str, ...]]:
    """SQL keeping the namespaces under `prefix`, as a range of their text (an index can
    serve it): every text that starts with "a.b." lies in ["a.b.", "a.b/"), '/' following '.'."""
    if not prefix:
        return "1", ()
    low = namespace_key(prefix)
    return "i.namespace >= ? AND i.namespace < ?", (low, low[:-1] + "/")


def matches_sql(where: str, window: str) -> str:
    """The items matching an FTS query, best first. CROSS JOIN keeps the index's matches the
    outer loop: with a plain JOIN the planner ran the MATCH once per item under the prefix
    (12.5 s at 10,000 items; 89 ms so, with most of them matching)."""
    return (
        f"SELECT {COLUMNS}, -bm25(store_fts) FROM store_fts CROSS JOIN store_items i ON i.rowid = store_fts.rowid "
        f"WHERE store_fts MATCH ? AND i.owner = ? AND {where} AND {LIVE} ORDER BY bm25(store_fts), i.rowid{window}"
    )


def fts_query(stems: Sequence[str]) -> str:
    return " OR ".join(f'"{s}"' for s in stems)


class SqliteStore(StorePort):
    def __init__(self, writer: Worker, reader: Worker) -> None:
        self._writer = writer
        self._reader = reader

    async def put(self, owner: str, item: PutItem, now: datetime, vector: Vector | None = None) -> None:
        stems = item_stems(item.value, item.index)
        kept = vector if item.index else None
        at = iso(now)
        expires = expiry(now, item.ttl_minutes)
        row = (owner, namespace_key(item.namespace), item.key, json.dumps(item.value, ensure_ascii=False), stems, at, at)
        ttl = (item.ttl_minutes, iso(expires) if expires is not None else None)
        embedded = (to_blob(kept.values), kept.model) if kept is not None else (None, None)

        def write(c: sqlite3.Connection) -> None:
            with transaction(c):
                # an expired item is gone: the new one starts afresh (and expired rows go, by their index)
                c.execute("DELETE FROM store_items WHERE expires_at IS NOT NULL AND expires_at <= ?", (at,))
                c.execute(UPSERT, row + ttl + embedded)

        await self._writer.run(write)

    async def get(self, owner: str, namespace: Namespace, key: str, now: datetime, refresh_ttl: bool = False) -> StoreItem | None:
        sql = f"SELECT {COLUMNS}, i.ttl_minutes FROM store_items i WHERE owner = ? AND namespace = ? AND key = ? AND {LIVE}"
        args = (owner, namespace_key(namespace), key, iso(now))
        rows = await self._reader.run(lambda c: c.execute(sql, args).fetchall())
        if not rows:
            return None
        if refresh_ttl and rows[0][5] is not None:
            await self._refresh(owner, [(namespace, key)], now)
        return item_from_row(rows[0])

    async def _refresh(self, owner: str, keys: Sequence[tuple[Namespace, str]], now: datetime) -> None:
        def write(c: sqlite3.Connection) -> None:
            with transaction(c):
                for ns, key in keys:
                    c.execute(
                        "UPDATE store_items SET expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', ?, printf('+%f minutes', ttl_minutes)) "
                        "WHERE owner = ? AND namespace = ? AND key = ? AND ttl_minutes IS NOT NULL",
                        (iso(now)[:-1], owner, namespace_key(ns), key),
                    )

        await self._writer.run(write)

    async def delete(self, owner: str, namespace: Namespace, key: str) -> bool:
        def write(c: sqlite3.Connection) -> bool:
            with transaction(c):
                sql = "DELETE FROM store_items WHERE owner = ? AND namespace = ? AND key = ?"
                return c.execute(sql, (owner, namespace_key(namespace), key)).rowcount > 0

        return await self._writer.run(write)

    async def search(self, owner: str, query: SearchItems, now: datetime, vector: Vector | None = None) -> Sequence[StoreItem]:
        if vector is not None and query.query is not None:
            found = await self._hybrid(owner, query, now, vector)
        else:
            found = await self._plain(owner, query, now)
        if query.refresh_ttl and found:
            await self._refresh(owner, [(i.namespace, i.key) for i in found], now)
        return found

    async def _hybrid(self, owner: str, query: SearchItems, now: datetime, vector: Vector) -> list[StoreItem]:
        where, bounds = prefix_range(query.prefix)
        window = "" if query.filter else f" LIMIT {candidate_depth(query)}"
        stems = query_stems(query.query or "")
        lexical_sql = matches_sql(where, window)
        nearest_sql = (
            f"SELECT {COLUMNS}, vec_distance_cosine(i.embedding, ?) AS d FROM store_items i WHERE i.owner = ? AND {where} "
            f"AND {LIVE} AND i.embedding_model = ? AND length(i.embedding) = ? ORDER BY d, i.rowid{window}"
        )
        blob = to_blob(vector.values)

        def read(c: sqlite3.Connection) -> tuple[list[Any], list[Any]]:
            lexical = c.execute(lexical_sql, (fts_query(stems), owner, *bounds, iso(now))).fetchall() if stems else []
            nearest = c.execute(nearest_sql, (blob, owner, *bounds, iso(now), vector.model, len(blob))).fetchall()
            return lexical, nearest

        lexical, nearest = await self._reader.run(read)
        return fused_page([item_from_row(r) for r in lexical], [item_from_row(r) for r in nearest], query)

    async def _plain(self, owner: str, query: SearchItems, now: datetime) -> list[StoreItem]:
        where, bounds = prefix_range(query.prefix)
        base = (owner, *bounds, iso(now))
        # with a filter, the window is cut after it (in Python); without, by the database
        window = "" if query.filter else f" LIMIT {query.limit} OFFSET {query.offset}"
        if query.query is not None:
            stems = query_stems(query.query)
            if not stems:
                return []
            sql = matches_sql(where, window)
            args: tuple[Any, ...] = (fts_query(stems), *base)
        else:
            sql = f"SELECT {COLUMNS}, NULL FROM store_items i WHERE i.owner = ? AND {where} AND {LIVE} "
            sql += f"ORDER BY i.updated_at DESC, i.rowid DESC{window}"
            args = base
        rows = await self._reader.run(lambda c: c.execute(sql, args).fetchall())
        found = [item_from_row(r, r[5]) for r in rows]
        if query.filter:
            found = [i for i in found if matches(i.value, query.filter)][query.offset : query.offset + query.limit]
        return found

    async def list_namespaces(self, owner: str, query: ListNamespaces, now: datetime) -> Sequence[Namespace]:
        sql = f"SELECT DISTINCT i.namespace FROM store_items i WHERE i.owner = ? AND {LIVE}"
        rows = await self._reader.run(lambda c: c.execute(sql, (owner, iso(now))).fetchall())
        return query.select([namespace_of(r[0]) for r in rows])
