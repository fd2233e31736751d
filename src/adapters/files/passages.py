"""BM25 over a file's passages, by SQLite's FTS5 (the standard library's sqlite3, in memory):
the ranking the search of conversations already uses, with the Porter stemmer, so "lighthouses"
matches "lighthouse". Nothing is stored: the table lives for one ranking."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence

from ports.passages import PassageRanker

MAX_TERMS = 64  # words of the message a ranking uses (the longest first: they tell most)
_WORD = re.compile(r"\w{2,}")


def fts_terms(query: str) -> str | None:
    """The message's words as an FTS5 query (any of them, each quoted), None when it has none."""
    words = sorted(set(w.casefold() for w in _WORD.findall(query)), key=lambda w: (-len(w), w))[:MAX_TERMS]
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words) or None


class Bm25Passages(PassageRanker):
    def rank(self, query: str, passages: Sequence[str]) -> Sequence[float]:
        terms = fts_terms(query)
        scores = [0.0] * len(passages)
        if terms is None or not passages:
            return scores
        db = sqlite3.connect(":memory:")
        try:
            db.execute("CREATE VIRTUAL TABLE p USING fts5(body, tokenize = 'porter unicode61')")
            db.executemany("INSERT INTO p (rowid, body) VALUES (?, ?)", enumerate(passages))
            for rowid, rank in db.execute("SELECT rowid, bm25(p) FROM p WHERE p MATCH ?", (terms,)):
                scores[rowid] = max(-rank, 1e-9)  # bm25() is lower for a better match; a match counts
        finally:
            db.close()
        return scores
