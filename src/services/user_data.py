"""What a user keeps besides conversations (issue 45 item 5): the store's items (the agent's
memory of them among them) and their knowledge collections, copied whole for an export,
stored back by an import, and deleted with the user."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from domain.knowledge import Chunk, KnowledgeFile
from domain.model import utc_now
from domain.store import PutItem, SearchItems, StoreItem
from ports.knowledge import KnowledgeStore
from ports.store import StorePort

log = logging.getLogger(__name__)
PAGE = 1000  # store items read at a time (the store's largest page)


@dataclass(frozen=True)
class CollectionCopy:
    name: str
    created_at: datetime
    files: tuple[tuple[KnowledgeFile, tuple[Chunk, ...]], ...]


@dataclass(frozen=True)
class UserCopy:
    """A user's store items and collections (their files' passages as indexed: an import
    stores them as they were, without reading the files again)."""

    items: tuple[StoreItem, ...]
    collections: tuple[CollectionCopy, ...]


class UserData:
    def __init__(self, store: StorePort, knowledge: KnowledgeStore, clock: Callable[[], datetime] = utc_now) -> None:
        self.store = store
        self.knowledge = knowledge
        self.clock = clock

    async def export(self, owner: str) -> UserCopy:
        items: list[StoreItem] = []
        while True:
            page = await self.store.search(owner, SearchItems((), limit=PAGE, offset=len(items)), self.clock())
            items.extend(page)
            if len(page) < PAGE:
                break
        collections = []
        for c in await self.knowledge.collections(owner):
            files = []
            for f in await self.knowledge.files(owner, c.name) or []:
                chunks = await self.knowledge.chunks(owner, c.name, f.name)
                if chunks is not None:  # deleted meanwhile
                    files.append((f, tuple(chunks)))
            collections.append(CollectionCopy(c.name, c.created_at, tuple(files)))
        return UserCopy(tuple(items), tuple(collections))

    async def restore(self, owner: str, copy: UserCopy) -> None:
        """Store the copy's items (over the user's items of the same namespace and key: an
        import twice leaves one) and collections (a file over the one of its name)."""
        now = self.clock()
        for item in copy.items:
            await self.store.put(owner, PutItem(item.namespace, item.key, item.value), now)
        for c in copy.collections:
            await self.knowledge.create(owner, c.name, c.created_at)
            for f, chunks in c.files:
                await self.knowledge.put_file(owner, c.name, f, chunks)
        log.info("imported %d store items and %d collections for the user %s", len(copy.items), len(copy.collections), owner)

    async def delete(self, owner: str) -> tuple[int, int]:
        """Delete every store item and collection of the user: (items, collections)."""
        items = 0
        while page := await self.store.search(owner, SearchItems((), limit=PAGE), self.clock()):
            for item in page:
                items += await self.store.delete(owner, item.namespace, item.key)
        collections = await self.knowledge.drop_all(owner)
        log.info("deleted %d store items and %d collections of the user %s", items, collections, owner)
        return items, collections
