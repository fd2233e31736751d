"""Words, stems and snippets as every search index sees them (in memory, SQLite and
PostgreSQL), so that all three find the same entries and mark the same words.

A word is a run of letters and digits (domain.search.words' rule), in lower case without
diacritics. Its stem is the English Snowball stemmer's (Porter2, through PyStemmer: the
algorithm of PostgreSQL's `english` configuration) of that folded word: "keepers",
"keeping" and "keeper" share "keeper", "lighthouses" and "lighthouse" share "lighthous".
Stemming the query and the text alike never loses an exact match (equal words have equal
stems); words the English rules do not know (other languages, names, numbers) mostly stay
as they are. The stems are computed here, not by the database, so the backends agree.

A snippet is made here too, on the stored text: the words around the best matches, each
match marked, in time linear in the text."""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable, Sequence

import Stemmer  # PyStemmer (no type hints: pyproject.toml tells mypy)

from ports.search import MARK_CLOSE, MARK_OPEN, SearchQuery, Term

WORD = re.compile(r"[^\W_]+")  # domain.search.words' rule
SNIPPET_WORDS = 16  # as SQLite's snippet() showed them
MAX_HITS = 64  # matches of each term a snippet considers: the first ones, in text order

_local = threading.local()  # a Stemmer object is not thread-safe: one per thread


def fold(word: str) -> str:
    """A word as indexed: lower case, without diacritics."""
    if word.isascii():  # most words: nothing to decompose
        return word.lower()
    decomposed = unicodedata.normalize("NFD", word.lower())
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


def stems(folded: Sequence[str]) -> list[str]:
    """The stems of folded words, in order."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return [str(s) for s in stemmer.stemWords(folded)]


def stem(word: str) -> str:
    """The stem of a word (folded first)."""
    return stems([fold(word)])[0]


def stem_text(text: str) -> str:
    """The distinct stems of a text's words, in the order they first appear, joined by
    spaces: what an index keeps beside the text to find a `stem` term."""
    return " ".join(dict.fromkeys(stems([fold(w) for w in WORD.findall(text)])))


def _matcher(term: Term, stemmed: Callable[[], Sequence[str]]) -> Callable[[Sequence[str], int], bool]:
    """Whether the term's last word matches the folded word at a position."""
    last = fold(term.words[-1])
    if term.stem:
        root = stem(last)
        if term.prefix:
            return lambda folded, i: folded[i].startswith(last) or stemmed()[i] == root
        return lambda folded, i: stemmed()[i] == root
    if term.prefix:
        return lambda folded, i: folded[i].startswith(last)
    return lambda folded, i: folded[i] == last


def _matches(folded: Sequence[str], term: Term, stemmed: Callable[[], Sequence[str]] | None = None) -> list[tuple[int, int]]:
    """(first, last + 1) word positions where the term matches: the first MAX_HITS.
    `stemmed()`: the stems of `folded` (asked for only by a `stem` term)."""
    head = [fold(w) for w in term.words[:-1]]
    n = len(head) + 1
    last = _matcher(term, stemmed or _lazy(folded))
    out: list[tuple[int, int]] = []
    for i in range(n - 1, len(folded)):
        if last(folded, i) and folded[i - n + 1 : i] == head:
            out.append((i - n + 1, i + 1))
            if len(out) == MAX_HITS:
                break
    return out


def _lazy(folded: Sequence[str]) -> Callable[[], Sequence[str]]:
    """The stems of `folded`, computed once when first asked for."""
    cache: list[list[str]] = []

    def get() -> Sequence[str]:
        if not cache:
            cache.append(stems(folded))
        return cache[0]

    return get


def matches_all(text: str, query: SearchQuery) -> bool:
    """Whether every term of the query matches the text (what an index finds)."""
    folded = [fold(w) for w in WORD.findall(text)]
    stemmed = _lazy(folded)
    return all(_matches(folded, term, stemmed) for term in query.terms)


def _window(by_term: Sequence[Sequence[tuple[int, int]]], count: int, size: int) -> int:
    """The first word of the earliest window of `size` words that shows the most terms,
    with its matches roughly centred. One pass over the matches: for each term, the
    matches inside the window are a run of its (ordered) list, whose ends only move on."""
    lists = [hits for hits in by_term if hits]
    if not lists:
        return 0
    lo, hi = [0] * len(lists), [0] * len(lists)
    best, start, last = 0, 0, 0
    for first in sorted({a for hits in lists for a, _ in hits}):
        shown, end = 0, first
        for k, hits in enumerate(lists):
            while lo[k] < len(hits) and hits[lo[k]][0] < first:
                lo[k] += 1
            hi[k] = max(hi[k], lo[k])
            while hi[k] < len(hits) and hits[hi[k]][1] <= first + size:
                hi[k] += 1
            if hi[k] > lo[k]:
                shown += 1
                end = max(end, hits[hi[k] - 1][1])
        if shown > best:
            best, start, last = shown, first, end
            if shown == len(lists):
                break
    slack = max(0, size - (last - start))
    return max(0, min(start - slack // 2, count - size))


def snippet(text: str, query: SearchQuery, size: int = SNIPPET_WORDS, indexed: int | None = None) -> str:
    """Up to `size` words of the text around its best matches, each match (a phrase as a
    whole) between MARK_OPEN and MARK_CLOSE, '…' where the text goes on. Linear in the
    text, which is read as far as the index reads it (its first `indexed` characters)."""
    cut = text if indexed is None else text[:indexed]
    spans = [m.span() for m in WORD.finditer(cut)]
    if not spans:
        return text if cut is text else cut + "…"
    folded = [fold(cut[a:b]) for a, b in spans]
    stemmed = _lazy(folded)
    by_term = [_matches(folded, term, stemmed) for term in query.terms]
    start = _window(by_term, len(spans), size)
    end = min(len(spans), start + size)
    hits = sorted((a, b) for hits in by_term for a, b in hits if a < end and b > start)
    marks: list[tuple[int, int]] = []  # merged word ranges inside the window
    for a, b in hits:
        a, b = max(a, start), min(b, end)
        if marks and a < marks[-1][1]:
            marks[-1] = (marks[-1][0], max(marks[-1][1], b))
        else:
            marks.append((a, b))
    more = end < len(spans) or len(cut) < len(text)
    left = 0 if start == 0 else spans[start][0]
    right = len(cut) if end == len(spans) else spans[end - 1][1]
    out, at = [], left
    for a, b in marks:
        out += [cut[at : spans[a][0]], MARK_OPEN, cut[spans[a][0] : spans[b - 1][1]], MARK_CLOSE]
        at = spans[b - 1][1]
    out.append(cut[at:right])
    return ("…" if start > 0 else "") + "".join(out) + ("…" if more else "")
