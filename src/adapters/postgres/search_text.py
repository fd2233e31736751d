"""Text for the PostgreSQL search index, split as SQLite's FTS5 (unicode61, diacritics
removed) and the query parser (domain.search.words) split it, so both backends match the
same entries.

PostgreSQL's own parser knows e-mail addresses, URLs, hyphenated words and file paths, and
would make `foo-bar` one lexeme plus two at other positions. So the words are split here
(adapters.search_text: runs of letters and digits, lower case, diacritics removed) and
PostgreSQL only sees them joined by spaces, with the 'simple' configuration (no stemming,
no stop words): `words` holds them with their positions, `stems` their distinct stems
(adapters.search_text's stemmer, not PostgreSQL's: the same as the other indexes use),
without positions. Queries are built from the parsed terms, each word quoted: user text
never reaches to_tsquery's syntax."""

from __future__ import annotations

from dataclasses import dataclass, field

from adapters.search_text import WORD, fold, stem, stems
from ports.search import SearchQuery, Term

# A tsvector must stay under 1 MB (lexemes and positions: under 3.5 bytes per byte of
# input at worst), or the write that indexes it fails: a message's words past the first
# 256 KiB are not indexed. PostgreSQL also keeps positions up to 16,383 only, so a phrase
# past that many words may not be found. The stems of those words, distinct and without
# positions, take less than the words do.
MAX_TERMS_BYTES = 256 * 1024


def terms(text: str) -> str:
    """The words of a text as the index stores them, joined by spaces."""
    out: list[str] = []
    size = 0
    for m in WORD.finditer(text):
        word = fold(m.group())
        size += len(word.encode()) + 1
        if size > MAX_TERMS_BYTES:
            break
        if word:
            out.append(word)
    return " ".join(out)


def stem_terms(words: str) -> str:
    """The distinct stems of `terms(...)`'s words, joined by spaces (the `stems` column)."""
    return " ".join(dict.fromkeys(stems(words.split())))


def _quoted(word: str) -> str:
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def _on_words(term: Term) -> str:
    """The term on `words`: its words in a row (<->), the last one a prefix (:*)."""
    return " <-> ".join(_quoted(fold(w)) for w in term.words) + (":*" if term.prefix else "")


@dataclass(frozen=True)
class TsQueries:
    """A query as to_tsquery('simple', …) texts: `words` and `stems` must both match (on
    their columns; "" when no term is for that column), and each of `either` on one of the
    two (a word being typed: its prefix, or its stem)."""

    words: str = ""
    stems: str = ""
    either: tuple[tuple[str, str], ...] = field(default=())

    def ranked(self) -> tuple[str, str]:
        """The queries that rank an entry on each column: any of the terms (|)."""
        on_words = [q for q in (self.words, *(w for w, _ in self.either)) if q]
        on_stems = [q for q in (self.stems, *(s for _, s in self.either)) if q]
        return " | ".join(f"({q})" for q in on_words), " | ".join(f"({q})" for q in on_stems)


def tsquery(query: SearchQuery) -> TsQueries:
    """Every term required: a phrase's words in a row (<->), a prefix as :*, a `stem`
    term's stem on `stems`; a typed word's prefix on `words` or its stem on `stems`."""
    words: list[str] = []
    stemmed: list[str] = []
    either: list[tuple[str, str]] = []
    for term in query.terms:
        if not term.stem:
            words.append(_on_words(term))
        elif term.prefix:
            either.append((_on_words(term), _quoted(stem(term.words[0]))))
        else:
            stemmed.append(_quoted(stem(term.words[0])))
    return TsQueries(" & ".join(words), " & ".join(stemmed), tuple(either))
