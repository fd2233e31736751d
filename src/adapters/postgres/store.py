"""StorePort on PostgreSQL, on the backend's pool: a put is committed before it returns
(synchronous_commit, the server's default). Full-text search is the items' stems as a
tsvector (store_schema.py); filters are domain.store.matches, in Python, as every backend."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from adapters.postgres.database import PostgresDatabase
from adapters.storage.store_text import item_stems, query_stems
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

COLUMNS = "namespace, key, value, created_at, updated_at"
LIVE = "(expires_at IS NULL OR expires_at > %s)"
UPSERT = """
INSERT INTO store_items (owner, namespace, key, value, stems, created_at, updated_at, ttl_minutes, expires_at,
    embedding, embedding_model)
VALUES (%s, %s, %s, %s, strip(to_tsvector('simple', %s)), %s, %s, %s, %s, %s, %s)
ON CONFLICT (owner, namespace, key) DO UPDATE SET
    value = excluded.value, stems = excluded.stems, updated_at = excluded.updated_at,
    ttl_minutes = excluded.ttl_minutes, expires_at = excluded.expires_at,
    embedding = excluded.embedding, embedding_model = excluded.embedding_model
"""
# the cosine of two unit vectors, computed in SQL (pgvector is not installable here: store_schema.py)
SIMILARITY = "(SELECT sum(a * b) FROM unnest(embedding, %s::real[]) AS v(a, b))"
REFRESH = (
    "UPDATE store_items SET expires_at = %s + ttl_minutes * interval '1 minute' "
    "WHERE owner = %s AND namespace = ANY(%s) AND key = ANY(%s) AND ttl_minutes IS NOT NULL"
)


def item_from_row(row: Sequence[Any]) -> StoreItem:
    ns, key, value, created, updated, score = row[:6]
    return StoreItem(namespace_of(ns), key, json.loads(value), created, updated, float(score) if score is not None else None)


def prefix_range(prefix: Namespace) -> tuple[str, tuple[str, ...]]:
    """As adapters/sqlite/store.py's: the namespaces under `prefix` as a range of their text."""
    if not prefix:
        return "TRUE", ()
    low = namespace_key(prefix)
    return "namespace >= %s AND namespace < %s", (low, low[:-1] + "/")


def _tsquery(stems: Sequence[str]) -> str:
    return " | ".join(f"'{s}'" for s in stems)


def _matches_sql(where: str, window: str) -> str:
    return (
        f"SELECT {COLUMNS}, ts_rank(stems, q) FROM store_items, to_tsquery('simple', %s) q "
        f"WHERE stems @@ q AND owner = %s AND {where} AND {LIVE} ORDER BY 6 DESC, namespace, key{window}"
    )


class PostgresStore(StorePort):
    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    async def put(self, owner: str, item: PutItem, now: datetime, vector: Vector | None = None) -> None:
        stems = item_stems(item.value, item.index)
        kept = vector if item.index else None
        embedded = (list(kept.values), kept.model) if kept is not None else (None, None)
        value = json.dumps(item.value, ensure_ascii=False)
        args = (owner, namespace_key(item.namespace), item.key, value, stems, now, now, item.ttl_minutes)
        async with self.db.cursor(transaction=True) as cur:
            # an expired item is gone: the new one starts afresh (its created_at too)
            await cur.execute(
                "DELETE FROM store_items WHERE owner = %s AND namespace = %s AND key = %s AND expires_at <= %s",
                (owner, namespace_key(item.namespace), item.key, now),
            )
            await cur.execute(UPSERT, (*args, expiry(now, item.ttl_minutes), *embedded))

    async def get(self, owner: str, namespace: Namespace, key: str, now: datetime, refresh_ttl: bool = False) -> StoreItem | None:
        async with self.db.cursor() as cur:
            await cur.execute(
                f"SELECT {COLUMNS}, NULL, ttl_minutes FROM store_items WHERE owner = %s AND namespace = %s AND key = %s AND {LIVE}",
                (owner, namespace_key(namespace), key, now),
            )
            row = await cur.fetchone()
        if row is None:
            return None
        if refresh_ttl and row[6] is not None:
            await self._refresh(owner, [(namespace, key)], now)
        return item_from_row(row)

    async def _refresh(self, owner: str, keys: Sequence[tuple[Namespace, str]], now: datetime) -> None:
        async with self.db.cursor() as cur:
            for ns, key in keys:
                await cur.execute(REFRESH, (now, owner, [namespace_key(ns)], [key]))

    async def delete(self, owner: str, namespace: Namespace, key: str) -> bool:
        async with self.db.cursor() as cur:
            await cur.execute(
                "DELETE FROM store_items WHERE owner = %s AND namespace = %s AND key = %s RETURNING key",
                (owner, namespace_key(namespace), key),
            )
            return await cur.fetchone() is not None

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
        nearest_sql = (
            f"SELECT {COLUMNS}, {SIMILARITY} AS s FROM store_items WHERE owner = %s AND {where} AND {LIVE} "
            f"AND embedding_model = %s AND cardinality(embedding) = %s ORDER BY s DESC, namespace, key{window}"
        )
        async with self.db.cursor() as cur:
            lexical: list[Any] = []
            if stems:
                await cur.execute(_matches_sql(where, window).encode(), (_tsquery(stems), owner, *bounds, now))
                lexical = list(await cur.fetchall())
            await cur.execute(nearest_sql.encode(), (list(vector.values), owner, *bounds, now, vector.model, vector.dimensions))
            nearest = list(await cur.fetchall())
        return fused_page([item_from_row(r) for r in lexical], [item_from_row(r) for r in nearest], query)

    async def _plain(self, owner: str, query: SearchItems, now: datetime) -> list[StoreItem]:
        where, bounds = prefix_range(query.prefix)
        window = "" if query.filter else f" LIMIT {query.limit} OFFSET {query.offset}"
        if query.query is not None:
            stems = query_stems(query.query)
            if not stems:
                return []
            sql = _matches_sql(where, window)
            args: tuple[Any, ...] = (_tsquery(stems), owner, *bounds, now)
        else:
            sql = f"SELECT {COLUMNS}, NULL FROM store_items WHERE owner = %s AND {where} AND {LIVE} "
            sql += f"ORDER BY updated_at DESC, namespace, key{window}"
            args = (owner, *bounds, now)
        async with self.db.cursor() as cur:
            await cur.execute(sql.encode(), args)
            found = [item_from_row(r) for r in await cur.fetchall()]
        if query.filter:
            found = [i for i in found if matches(i.value, query.filter)][query.offset : query.offset + query.limit]
        return found

    async def list_namespaces(self, owner: str, query: ListNamespaces, now: datetime) -> Sequence[Namespace]:
        async with self.db.cursor() as cur:
            await cur.execute(f"SELECT DISTINCT namespace FROM store_items WHERE owner = %s AND {LIVE}", (owner, now))
            return query.select([namespace_of(r[0]) for r in await cur.fetchall()])
