"""The store with semantic search (issue 45, EMBEDDING_MODEL): a StorePort over another that
embeds what it stores and what it is asked, so the backends keep only vectors and ranks.
Without an embedding model it passes every call through (full-text search alone).

A put's vector is made before the item's transaction and written in it: the item and its
embedding are one write, durable before the put returns, and a put whose embedding fails
writes nothing and says why (ModelUnreachable, ModelBadResponse), as a failed write should.
Not a background step: a background queue would make an acknowledged item findable by words
but not yet by meaning, and would be a second durable log to keep in step with the first,
for a cost (one embedding call, ~10-50 ms on a local server) the writes of memory and of
the agent's tools can bear. An item put with `index=False` is not embedded, as LangGraph's
`index=False` says; its text is not indexed either."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from domain.ranking import Vector
from domain.store import ListNamespaces, Namespace, PutItem, SearchItems, StoreItem, text_of
from ports.embeddings import EmbeddingPort
from ports.store import StorePort


class SemanticStore(StorePort):
    def __init__(self, store: StorePort, embeddings: EmbeddingPort | None = None) -> None:
        self.store = store
        self.embeddings = embeddings

    async def aclose(self) -> None:
        if self.embeddings is not None:
            await self.embeddings.aclose()

    async def put(self, owner: str, item: PutItem, now: datetime, vector: Vector | None = None) -> None:
        text = text_of(item.value).strip() if item.index else ""
        if vector is None and text and self.embeddings is not None:
            vector = (await self.embeddings.embed([text]))[0]
        await self.store.put(owner, item, now, vector)

    async def get(self, owner: str, namespace: Namespace, key: str, now: datetime, refresh_ttl: bool = False) -> StoreItem | None:
        return await self.store.get(owner, namespace, key, now, refresh_ttl)

    async def delete(self, owner: str, namespace: Namespace, key: str) -> bool:
        return await self.store.delete(owner, namespace, key)

    async def search(self, owner: str, query: SearchItems, now: datetime, vector: Vector | None = None) -> Sequence[StoreItem]:
        if vector is None and self.embeddings is not None and query.query is not None and query.query.strip():
            vector = (await self.embeddings.embed([query.query]))[0]
        return await self.store.search(owner, query, now, vector)

    async def list_namespaces(self, owner: str, query: ListNamespaces, now: datetime) -> Sequence[Namespace]:
        return await self.store.list_namespaces(owner, query, now)
