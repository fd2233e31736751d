"""SearchIndex: full-text search over conversation titles and messages."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Protocol

from domain.search import INDEXED_ROLES, MARK_CLOSE, MARK_OPEN, SearchHit, SearchQuery, Term, Unsearched

__all__ = [
    "INDEXED_ROLES",
    "MARK_CLOSE",
    "MARK_OPEN",
    "SearchHit",
    "SearchIndex",
    "SearchQuery",
    "Term",
    "Unsearched",
]


class SearchIndex(Protocol):
    """An index of every conversation's title and the contents of its user and assistant
    messages (not tool results or summaries), kept in step with the stored threads.

    One entry per title and per message with text; an entry matches when every term of
    the query is in it (case and diacritics ignored; a `stem` term by the English
    Snowball stemmer, the same in every adapter, so that all find the same entries). `message_index`
    counts the messages as the conversation detail lists them. Only each conversation's
    active branch is indexed: `unsearched` says what that leaves out.
    """

    @abstractmethod
    async def search(self, query: SearchQuery, limit: int, offset: int, owner: str | None = None) -> Sequence[SearchHit]:
        """Up to `limit` matching entries, best first (stable for unchanged data), after
        skipping the first `offset`; with `owner`, only entries of that user's
        conversations (ranked among themselves: another user's never count). No match gives an empty sequence. An index may rank
        only the most recent matches of a very common query (SQLite and PostgreSQL:
        2,000), so that every query stays fast; older ones are then not returned."""

    @abstractmethod
    async def unsearched(self, owner: str | None = None) -> Unsearched:
        """The inactive branches a search does not look in (of `owner`'s conversations,
        with `owner`): zero for a store that keeps no branches."""

    @abstractmethod
    async def rebuild(self) -> int:
        """Drop every entry and index every conversation again from its stored thread;
        returns the number of entries written. Idempotent."""
