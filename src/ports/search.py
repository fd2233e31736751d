"""SearchIndex: full-text search over conversation titles and messages."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

# The marks around each match in a hit's snippet (control characters, which are removed
# from indexed text, so they cannot come from a message).
MARK_OPEN, MARK_CLOSE = "\x02", "\x03"

INDEXED_ROLES = ("user", "assistant")  # plus each conversation's title, role "title"


@dataclass(frozen=True)
class Term:
    """Consecutive words (one word, or a phrase); `prefix`: the last word is a prefix."""

    words: tuple[str, ...]
    prefix: bool = False


@dataclass(frozen=True)
class SearchQuery:
    """Terms that must all match the same entry. Words are lower case letters and digits."""

    terms: tuple[Term, ...]


@dataclass(frozen=True)
class SearchHit:
    conversation_id: str
    title: str
    message_index: int | None  # the message's index in the conversation detail; None: the title
    role: str  # "user", "assistant" or "title"
    snippet: str  # plain text around the match, matches between MARK_OPEN and MARK_CLOSE


class SearchIndex(Protocol):
    """An index of every conversation's title and the contents of its user and assistant
    messages (not tool results or summaries), kept in step with the stored threads.

    One entry per title and per message with text; an entry matches when every term of
    the query is in it (case and diacritics ignored). `message_index` counts the messages
    as the conversation detail lists them.
    """

    @abstractmethod
    async def search(self, query: SearchQuery, limit: int, offset: int) -> Sequence[SearchHit]:
        """Up to `limit` matching entries, best first (stable for unchanged data), after
        skipping the first `offset`. No match gives an empty sequence. An index may rank
        only the most recent matches of a very common query (SQLite and PostgreSQL:
        2,000), so that every query stays fast; older ones are then not returned."""

    @abstractmethod
    async def rebuild(self) -> int:
        """Drop every entry and index every conversation again from its stored thread;
        returns the number of entries written. Idempotent."""
