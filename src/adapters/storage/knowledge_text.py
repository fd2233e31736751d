"""The words a knowledge passage is found by, as every backend indexes them: the stems of
its words (adapters.search_text: folded, English Snowball), each as often as it occurs, so
the full-text rank counts them (BM25 in SQLite and in memory, ts_rank in PostgreSQL)."""

from __future__ import annotations

from adapters.search_text import WORD, fold, stems
from adapters.storage.store_text import query_stems

MAX_QUERY_STEMS = 64  # words of a message a search uses: the longest first, they tell most
# words of a question that say nothing of what it is about: matched, they would bring every
# passage (a query of only these searches with them all the same)
STOP = frozenset(
    "a an and are as at be by can do does did for from has have how i in is it its me my of on or our so "
    "that the their them then there these they this to was we were what when where which who why will "
    "with you your".split()
)


def passage_stems(text: str) -> str:
    return " ".join(stems([fold(w) for w in WORD.findall(text)]))


def search_stems(query: str) -> list[str]:
    """A query's distinct stems, the longest first, at most MAX_QUERY_STEMS (none: no word)."""
    words = query_stems(query)
    telling = [w for w in words if w not in STOP] or words
    return sorted(telling, key=lambda s: (-len(s), s))[:MAX_QUERY_STEMS]
