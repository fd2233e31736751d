"""Text for the PostgreSQL search index, split as SQLite's FTS5 (unicode61, diacritics
removed) and the query parser (domain.search.words) split it, so both backends match the
same entries.

PostgreSQL's own parser knows e-mail addresses, URLs, hyphenated words and file paths, and
would make `foo-bar` one lexeme plus two at other positions. So the words are split here
(runs of letters and digits, lower case, diacritics removed) and PostgreSQL only sees them
joined by spaces, with the 'simple' configuration (no stemming, no stop words). Queries are
built from the parsed terms, each word quoted: user text never reaches to_tsquery's syntax.
Snippets are made here too, on the stored text, with the same matching rule."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from ports.search import MARK_CLOSE, MARK_OPEN, SearchQuery, Term

_WORD = re.compile(r"[^\W_]+")  # domain.search.words' rule

# A tsvector must stay under 1 MB (lexemes and positions: under 3.5 bytes per byte of
# input at worst), or the write that indexes it fails: a message's words past the first
# 256 KiB are not indexed. PostgreSQL also keeps positions up to 16,383 only, so a phrase
# past that many words may not be found.
MAX_TERMS_BYTES = 256 * 1024
SNIPPET_WORDS = 16  # as SQLite's snippet()


def fold(word: str) -> str:
    """A word as indexed: lower case, without diacritics."""
    if word.isascii():  # most words: nothing to decompose
        return word.lower()
    decomposed = unicodedata.normalize("NFD", word.lower())
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


def terms(text: str) -> str:
    """The words of a text as the index stores them, joined by spaces."""
    out: list[str] = []
    size = 0
    for m in _WORD.finditer(text):
        word = fold(m.group())
        size += len(word.encode()) + 1
        if size > MAX_TERMS_BYTES:
            break
        if word:
            out.append(word)
    return " ".join(out)


def _quoted(word: str) -> str:
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery(query: SearchQuery) -> str:
    """The query for to_tsquery('simple', …): every term required (&), a phrase's words
    in a row (<->), a prefix as :*."""
    parts = []
    for term in query.terms:
        words = [fold(w) for w in term.words]
        parts.append(" <-> ".join(_quoted(w) for w in words) + (":*" if term.prefix else ""))
    return " & ".join(parts)


MAX_HITS = 64  # matches of each term a snippet considers: the first ones, in text order


def _matches(folded: Sequence[str], term: Term) -> list[tuple[int, int]]:
    """(first, last + 1) word positions where the term matches: the first MAX_HITS."""
    words = [fold(w) for w in term.words]
    n, head, last = len(words), words[:-1], words[-1]
    out: list[tuple[int, int]] = []
    for i in range(n - 1, len(folded)):
        word = folded[i]
        if (word.startswith(last) if term.prefix else word == last) and folded[i - n + 1 : i] == head:
            out.append((i - n + 1, i + 1))
            if len(out) == MAX_HITS:
                break
    return out


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


def snippet(text: str, query: SearchQuery, size: int = SNIPPET_WORDS) -> str:
    """Up to `size` words of the text around its best matches, each match (a phrase as a
    whole) between MARK_OPEN and MARK_CLOSE, '…' where the text goes on. Linear in the
    text, which is read as far as the index reads it (MAX_TERMS_BYTES)."""
    cut = text[:MAX_TERMS_BYTES]
    spans = [m.span() for m in _WORD.finditer(cut)]
    if not spans:
        return text if cut is text else cut + "…"
    folded = [fold(cut[a:b]) for a, b in spans]
    by_term = [_matches(folded, term) for term in query.terms]
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
