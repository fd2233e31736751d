"""LangGraph's `BaseStore` over the server's store (ports.store.StorePort), as one user sees
it: what a hosted graph's nodes read and write through their `store` argument or
`get_store()` goes to the same database as `/store/*` and the memory tools, in the namespaces
of the user who owns the thread (alice's graph never reads bob's items)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from domain.model import utc_now
from domain.store import ListNamespaces, PutItem, SearchItems, StoreItem
from ports.store import StorePort


class OwnedStore(BaseStore):
    """The store of user `owner` (the thread's). Sync calls (a sync node, run by LangGraph on
    a thread of its own) are handed to the event loop the store was made on."""

    def __init__(self, port: StorePort, owner: str, clock: Callable[[], datetime] = utc_now) -> None:
        self._port = port
        self._owner = owner
        self._clock = clock
        self._loop = asyncio.get_running_loop()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if _on_loop(self._loop):
            raise RuntimeError("a sync store call on the event loop would block it: use the store's async methods")
        return asyncio.run_coroutine_threadsafe(self.abatch(ops), self._loop).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return [await self._one(op) for op in ops]

    async def _one(self, op: Op) -> Result:
        now, owner, port = self._clock(), self._owner, self._port
        if isinstance(op, GetOp):
            found = await port.get(owner, op.namespace, op.key, now, refresh_ttl=op.refresh_ttl)
            return None if found is None else Item(**_fields(found))
        if isinstance(op, PutOp):
            if op.value is None:
                await port.delete(owner, op.namespace, op.key)
            else:
                item = PutItem(op.namespace, op.key, dict(op.value), op.ttl, index=op.index is not False)
                await port.put(owner, item, now)
            return None
        if isinstance(op, SearchOp):
            query = SearchItems(op.namespace_prefix, op.query, dict(op.filter or {}), op.limit, op.offset, op.refresh_ttl)
            return [SearchItem(**_fields(i), score=i.score) for i in await port.search(owner, query, now)]
        if isinstance(op, ListNamespacesOp):
            prefix = next((tuple(c.path) for c in op.match_conditions or () if c.match_type == "prefix"), None)
            suffix = next((tuple(c.path) for c in op.match_conditions or () if c.match_type == "suffix"), None)
            listing = ListNamespaces(prefix, suffix, op.max_depth, op.limit, op.offset)
            return list(await port.list_namespaces(owner, listing, now))
        raise ValueError(f"unknown store operation {type(op).__name__}")


def _fields(item: StoreItem) -> dict[str, Any]:
    return {
        "namespace": tuple(item.namespace),
        "key": item.key,
        "value": dict(item.value),
        "created_at": item.created_at,
        "updated_at": item.updated_at,
    }


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
