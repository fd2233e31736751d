"""The words a store item is found by, as every backend indexes them (in memory, SQLite,
PostgreSQL): the stems of its string values (adapters.search_text, the message search's
words), and a query's stems, any of which finds an item (best: the most matched)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.search_text import stem_text
from domain.store import text_of


def item_stems(value: Mapping[str, Any], index: bool) -> str | None:
    """The stems kept beside an item (None: not indexed, never found by a query)."""
    return stem_text(text_of(value)) if index else None


def query_stems(query: str) -> list[str]:
    """A query's distinct stems, in order (none: the query has no word, and finds nothing)."""
    return stem_text(query).split()
