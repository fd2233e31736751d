"""KnowledgeStore: each user's document collections, their files' passages and a full-text
index over them; Ranker: the seam where the candidates the index found are ordered (BM25's
order today; an embedding or hybrid ranker later, without touching the stores)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from domain.knowledge import Candidate, Chunk, Collection, KnowledgeFile


class KnowledgeStore(Protocol):
    """Collections keyed by (owner, name). `owner` is a user id: each method sees that
    user's collections only, so another user's collection is exactly an unknown one (None,
    False, absent). Every write is one transaction, committed before it returns: a file and
    its passages (and its index entries) are written, replaced or deleted together."""

    @abstractmethod
    async def create(self, owner: str, name: str, now: datetime) -> bool:
        """Create the collection; False when the owner has it already (nothing changes)."""

    @abstractmethod
    async def collections(self, owner: str) -> Sequence[Collection]:
        """The owner's collections, by name."""

    @abstractmethod
    async def drop(self, owner: str, name: str) -> bool:
        """Delete the collection with its files, passages and index entries; False when
        the owner has none of that name."""

    @abstractmethod
    async def files(self, owner: str, name: str) -> Sequence[KnowledgeFile] | None:
        """The collection's files, by name; None when the owner has no such collection."""

    @abstractmethod
    async def put_file(self, owner: str, name: str, file: KnowledgeFile, chunks: Sequence[Chunk]) -> bool:
        """Store the file and its passages in the collection, replacing a file of the same
        name with everything derived from it (re-indexed). False when the owner has no such
        collection (nothing is written)."""

    @abstractmethod
    async def delete_file(self, owner: str, name: str, file: str) -> bool:
        """Delete the file with its passages and index entries; False when there is none."""

    @abstractmethod
    async def chunks(self, owner: str, name: str, file: str) -> Sequence[Chunk] | None:
        """The file's passages in order; None when the owner has no such file."""

    @abstractmethod
    async def search(self, owner: str, names: Sequence[str], query: str, limit: int) -> Sequence[Candidate]:
        """The owner's passages in the named collections that share a word (its stem) with
        `query`, best first by the backend's full-text rank, at most `limit`; none for a
        query without words. Unknown names are ignored."""

    @abstractmethod
    async def drop_all(self, owner: str) -> int:
        """Delete every collection of the owner (a deleted user); how many there were."""


class Ranker(Protocol):
    """Orders what the full-text index found for a query (the candidates, best first by
    their full-text score). An embedding ranker scores each candidate's text against the
    query (and may fuse the two orders: hybrid); the default keeps the index's order."""

    @abstractmethod
    async def rank(self, query: str, candidates: Sequence[Candidate]) -> Sequence[Candidate]:
        """The candidates, best first (a subset is allowed); never more than given."""


class Retriever(Protocol):
    """What the agent's prompt needs of knowledge (services.knowledge.KnowledgeService)."""

    @abstractmethod
    async def existing(self, owner: str, names: Sequence[str]) -> list[str]:
        """Those of `names` the owner has as collections."""

    @abstractmethod
    async def retrieve(self, owner: str, names: Sequence[str], query: str, max_chars: int) -> tuple[Candidate, ...]:
        """The passages of the owner's collections `names` that best answer `query`, within `max_chars`."""
