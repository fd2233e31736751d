"""The store as the edges use it (LangGraph's `/store/*`, the graphs' `store`): every
namespace is the caller's own. The owner is the principal's user id, never a part of the
namespace a client names, so no namespace a user can write reaches another user's items,
and another user's item answers exactly as one that does not exist.

An admin's view is their own too, with ADMIN_SEES_ALL or not: a user's store holds what the
agent remembers about them, and the store API has no field to name another owner. (An
admin reads a user's memory as that user does, with a token of theirs.)"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from domain.model import utc_now
from domain.principals import LOCAL, Principal
from domain.store import ListNamespaces, Namespace, PutItem, SearchItems, StoreItem, check_key, check_namespace
from ports.store import StorePort


class StoreService:
    def __init__(self, store: StorePort, clock: Callable[[], datetime] = utc_now) -> None:
        self.store = store
        self.clock = clock

    async def put(self, item: PutItem, *, by: Principal = LOCAL) -> None:
        """Durable before it returns."""
        await self.store.put(by.user_id, item, self.clock())

    async def get(self, namespace: Namespace, key: str, refresh_ttl: bool = False, *, by: Principal = LOCAL) -> StoreItem | None:
        check_namespace(namespace)
        check_key(key)
        return await self.store.get(by.user_id, namespace, key, self.clock(), refresh_ttl)

    async def delete(self, namespace: Namespace, key: str, *, by: Principal = LOCAL) -> bool:
        check_namespace(namespace)
        check_key(key)
        return await self.store.delete(by.user_id, namespace, key)

    async def search(self, query: SearchItems, *, by: Principal = LOCAL) -> Sequence[StoreItem]:
        return await self.store.search(by.user_id, query, self.clock())

    async def namespaces(self, query: ListNamespaces, *, by: Principal = LOCAL) -> Sequence[Namespace]:
        return await self.store.list_namespaces(by.user_id, query, self.clock())
