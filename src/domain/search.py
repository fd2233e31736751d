"""Full-text search across every conversation: the query language and the use case.

A query is words, "quoted phrases" and prefixes (`deploy*`, `"blue gr"*`), all required
(AND). Words are runs of letters and digits, as the index splits text, so `foo-bar` is the
phrase "foo bar". Anything else (an unbalanced quote, a lone `*`, a `*` inside a word) is
InvalidInput: user text never reaches the index's own query syntax."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from domain.errors import InvalidInput

MAX_QUERY = 500  # characters
MAX_TERMS = 16
MAX_LIMIT = 100
DEFAULT_LIMIT = 20
MAX_OFFSET = 10_000
# `a*` matches nearly every word: sixteen one-letter prefixes took 4 s on SQLite, two-letter
# ones a hundredth of that
MIN_PREFIX = 2

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


_WORD = re.compile(r"[^\W_]+")
_TOKEN = re.compile(r'"([^"]*)"(\*?)|([^\s"]+)')


def words(text: str) -> tuple[str, ...]:
    """The words of a text, lower case, as the index splits them."""
    return tuple(_WORD.findall(text.lower()))


def parse_query(text: object) -> SearchQuery:
    """The query as terms to match, or InvalidInput saying what is wrong with it."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("q is required")
    if len(text) > MAX_QUERY:
        raise InvalidInput(f"q is longer than {MAX_QUERY} characters")
    if text.count('"') % 2:
        raise InvalidInput("Unbalanced quote in the query")
    terms: list[Term] = []
    for m in _TOKEN.finditer(text):
        phrase, star, bare = m.group(1), m.group(2), m.group(3)
        raw = phrase if phrase is not None else bare
        prefix = bool(star)
        if bare is not None and bare.endswith("*"):
            raw, prefix = bare[:-1], True
        if "*" in raw:
            raise InvalidInput("'*' may only end a word or a phrase")
        found = words(raw)
        if not found:
            if prefix:
                raise InvalidInput("'*' must follow a word")
            continue  # punctuation only: nothing to match, as the index would ignore it
        if prefix and len(found[-1]) < MIN_PREFIX:
            raise InvalidInput(f"A prefix needs at least {MIN_PREFIX} letters or digits before '*'")
        terms.append(Term(found, prefix))
    if not terms:
        raise InvalidInput("The query has no words to search for")
    if len(terms) > MAX_TERMS:
        raise InvalidInput(f"The query has more than {MAX_TERMS} terms")
    return SearchQuery(tuple(terms))


@dataclass(frozen=True)
class SearchResult:
    conversation_id: str
    title: str
    message_index: int | None
    role: str
    snippet: str  # plain text, matches between MARK_OPEN and MARK_CLOSE


@dataclass(frozen=True)
class SearchPage:
    results: Sequence[SearchResult]
    next_cursor: str | None


def _limit(limit: object) -> int:
    if limit is None:
        return DEFAULT_LIMIT
    try:
        size = int(str(limit))
    except ValueError:
        raise InvalidInput("limit must be an integer") from None
    if not 1 <= size <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}")
    return size


def _offset(cursor: object) -> int:
    if cursor is None or cursor == "":
        return 0
    text = str(cursor)
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_OFFSET:  # "¹" is a digit to isdigit()
        raise InvalidInput("Invalid cursor")
    return int(text)
