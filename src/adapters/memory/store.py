"""StorePort in memory: a dict behind a lock, gone when the process exits."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from adapters.storage.store_text import item_stems, query_stems
from domain.ranking import Vector, cosine
from domain.store import ListNamespaces, Namespace, PutItem, SearchItems, StoreItem, expiry, fused_page, in_prefix, matches
from ports.store import StorePort


@dataclass(frozen=True)
class _Row:
    item: StoreItem
    stems: frozenset[str] | None
    ttl_minutes: float | None
    expires_at: datetime | None
    vector: Vector | None = None

    def live(self, now: datetime) -> bool:
        return self.expires_at is None or self.expires_at > now


class InMemoryStore(StorePort):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, Namespace, str], _Row] = {}

    async def put(self, owner: str, item: PutItem, now: datetime, vector: Vector | None = None) -> None:
        stems = item_stems(item.value, item.index)
        with self._lock:
            known = self._rows.get((owner, item.namespace, item.key))
            created = known.item.created_at if known is not None and known.live(now) else now
            stored = StoreItem(item.namespace, item.key, dict(item.value), created, now)
            self._rows[(owner, item.namespace, item.key)] = _Row(
                stored,
                frozenset(stems.split()) if stems is not None else None,
                item.ttl_minutes,
                expiry(now, item.ttl_minutes),
                vector if item.index else None,
            )

    def _live(self, owner: str, now: datetime) -> list[tuple[tuple[str, Namespace, str], _Row]]:
        return [(k, row) for k, row in self._rows.items() if k[0] == owner and row.live(now)]

    def _refresh(self, key: tuple[str, Namespace, str], row: _Row, now: datetime) -> None:
        if row.ttl_minutes is not None:
            self._rows[key] = replace(row, expires_at=expiry(now, row.ttl_minutes))

    async def get(self, owner: str, namespace: Namespace, key: str, now: datetime, refresh_ttl: bool = False) -> StoreItem | None:
        with self._lock:
            row = self._rows.get((owner, namespace, key))
            if row is None or not row.live(now):
                return None
            if refresh_ttl:
                self._refresh((owner, namespace, key), row, now)
            return row.item

    async def delete(self, owner: str, namespace: Namespace, key: str) -> bool:
        with self._lock:
            return self._rows.pop((owner, namespace, key), None) is not None

    async def search(self, owner: str, query: SearchItems, now: datetime, vector: Vector | None = None) -> Sequence[StoreItem]:
        wanted = set(query_stems(query.query)) if query.query is not None else None
        if vector is not None and wanted is not None:
            return self._hybrid(owner, query, now, wanted, vector)
        with self._lock:
            found: list[tuple[float, tuple[str, Namespace, str], _Row]] = []
            for k, row in self._live(owner, now):
                if not in_prefix(row.item.namespace, query.prefix) or not matches(row.item.value, query.filter):
                    continue
                if wanted is None:
                    found.append((row.item.updated_at.timestamp(), k, row))
                elif row.stems is not None and wanted & row.stems:
                    found.append((float(len(wanted & row.stems)), k, row))
            found.sort(key=lambda f: (-f[0], f[1]))
            page = found[query.offset : query.offset + query.limit]
            if query.refresh_ttl:
                for _, k, row in page:
                    self._refresh(k, row, now)
            return [replace(row.item, score=score if wanted is not None else None) for score, _, row in page]

    def _hybrid(self, owner: str, query: SearchItems, now: datetime, wanted: set[str], vector: Vector) -> list[StoreItem]:
        with self._lock:
            rows = [(k, row) for k, row in self._live(owner, now) if in_prefix(row.item.namespace, query.prefix)]
            lexical = [(-len(wanted & row.stems), k, row) for k, row in rows if row.stems is not None and wanted & row.stems]
            nearest = [
                (-cosine(row.vector.values, vector.values), k, row)
                for k, row in rows
                if row.vector is not None and (row.vector.model, row.vector.dimensions) == (vector.model, vector.dimensions)
            ]
            legs = [[row.item for _, _, row in sorted(leg, key=lambda f: (f[0], f[1]))] for leg in (lexical, nearest)]
            page = fused_page(legs[0], legs[1], query)
            if query.refresh_ttl:
                for item in page:
                    key = (owner, item.namespace, item.key)
                    self._refresh(key, self._rows[key], now)
            return page

    async def list_namespaces(self, owner: str, query: ListNamespaces, now: datetime) -> Sequence[Namespace]:
        with self._lock:
            return query.select([row.item.namespace for _, row in self._live(owner, now)])
