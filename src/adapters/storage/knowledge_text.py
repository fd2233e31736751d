"""The words a knowledge passage is found by, as every backend indexes them: the stems of
its words (adapters.search_text: folded, English Snowball), each as often as it occurs, so
the full-text rank counts them (BM25 in SQLite and in memory, ts_rank in PostgreSQL)."""

from __future__ import annotations

from adapters.search_text import WORD, fold, stems
from adapters.storage.store_text import query_stems

MAX_QUERY_STEMS = 64  # words of a message a search uses: the longest first, they tell most


def passage_stems(text: str) -> str:
    return " ".join(stems([fold(w) for w in WORD.findall(text)]))


def search_stems(query: str) -> list[str]:
    """A query's distinct stems, the longest first, at most MAX_QUERY_STEMS (none: no word)."""
    return sorted(query_stems(query), key=lambda s: (-len(s), s))[:MAX_QUERY_STEMS]
