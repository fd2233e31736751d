"""StorePort: the long-term store (LangGraph's `BaseStore`: items under namespaces), every
namespace owned by a user (domain.store)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from domain.ranking import Vector
from domain.store import ListNamespaces, Namespace, PutItem, SearchItems, StoreItem


class StorePort(Protocol):
    """Items keyed by (owner, namespace, key). `owner` is a user id (domain.principals): each
    method sees that user's items only, so another user's item is exactly an unknown one
    (None, False, absent from a list). An item whose time to live has passed at `now` is
    unknown too, and may be deleted by any call. Every write is durable (committed, synced)
    before it returns, and takes effect for every process sharing the store.

    Full-text search (`SearchItems.query`) matches the words of an item's string values
    (domain.store.text_of), best first; an item put with `index=False` is never found by a
    query. Semantic search: a put may carry the item's embedding (`vector`, stored in the
    same transaction as the item), a search the query's; a query with a vector ranks hybrid,
    the full-text ranking and the ranking by cosine (among items whose vector is of the same
    model and width) fused by domain.store.fused_page. Embedding is the caller's
    (services.semantic_store), so the adapters never wait on a model server."""

    @abstractmethod
    async def put(self, owner: str, item: PutItem, now: datetime, vector: Vector | None = None) -> None:
        """Store the item, replacing the owner's item at (namespace, key): its `created_at`
        is kept, `updated_at` is `now`. Idempotent: the same put twice leaves one item.
        `vector`: its embedding (ignored with `index=False`); None: it has none."""

    @abstractmethod
    async def get(self, owner: str, namespace: Namespace, key: str, now: datetime, refresh_ttl: bool = False) -> StoreItem | None:
        """The owner's item, or None. `refresh_ttl`: an item with a time to live gets it
        afresh from `now`."""

    @abstractmethod
    async def delete(self, owner: str, namespace: Namespace, key: str) -> bool:
        """Delete the owner's item; False when there was none (nothing else happens)."""

    @abstractmethod
    async def search(self, owner: str, query: SearchItems, now: datetime, vector: Vector | None = None) -> Sequence[StoreItem]:
        """The owner's items under `query.prefix` matching its filter (and its words when
        it has a query: with a `score`, best first; with `vector` too, hybrid), else the
        most recently updated first; `query.offset` skipped, at most `query.limit`."""

    @abstractmethod
    async def list_namespaces(self, owner: str, query: ListNamespaces, now: datetime) -> Sequence[Namespace]:
        """The owner's namespaces that hold an item, as `query.select` picks them."""
