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


def _matches(folded: Sequence[str], term: Term) -> list[tuple[int, int]]:
    """(first, last + 1) word positions where the term matches."""
    words = [fold(w) for w in term.words]
    n, out = len(words), []
    for i in range(len(folded) - n + 1):
        last = folded[i + n - 1]
        if list(folded[i : i + n - 1]) == words[:-1] and (last.startswith(words[-1]) if term.prefix else last == words[-1]):
            out.append((i, i + n))
    return out


def _window(hits: Sequence[tuple[int, int, int]], count: int, size: int) -> int:
    """The first word of the earliest window of `size` words that shows the most terms,
    with its matches roughly centred."""
    terms = len({k for _, _, k in hits})
    best, start, last = 0, 0, 0
    for first in sorted({a for a, _, _ in hits}):
        inside = [(b, k) for a, b, k in hits if first <= a and b <= first + size]
        shown = len({k for _, k in inside})
        if shown > best:
            best, start, last = shown, first, max(b for b, _ in inside)
            if shown == terms:
                break
    slack = max(0, size - (last - start))
    return max(0, min(start - slack // 2, count - size))


def snippet(text: str, query: SearchQuery, size: int = SNIPPET_WORDS) -> str:
    """Up to `size` words of the text around its best matches, each match (a phrase as a
    whole) between MARK_OPEN and MARK_CLOSE, '…' where the text goes on."""
    spans = [m.span() for m in _WORD.finditer(text)]
    folded = [fold(text[a:b]) for a, b in spans]
    hits = sorted((a, b, k) for k, term in enumerate(query.terms) for a, b in _matches(folded, term))
    start = _window(hits, len(spans), size)
    end = min(len(spans), start + size)
    if not spans:
        return text
    marks: list[tuple[int, int]] = []  # merged word ranges inside the window
    for a, b, _ in hits:
        a, b = max(a, start), min(b, end)
        if a >= b:
            continue
        if marks and a < marks[-1][1]:
            marks[-1] = (marks[-1][0], max(marks[-1][1], b))
        else:
            marks.append((a, b))
    left = 0 if start == 0 else spans[start][0]
    right = len(text) if end == len(spans) else spans[end - 1][1]
    out, at = [], left
    for a, b in marks:
        out += [text[at : spans[a][0]], MARK_OPEN, text[spans[a][0] : spans[b - 1][1]], MARK_CLOSE]
        at = spans[b - 1][1]
    out.append(text[at:right])
    return ("…" if start > 0 else "") + "".join(out) + ("…" if end < len(spans) else "")
