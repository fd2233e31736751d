"""Full-text search across every conversation: the query language and the use case.

A query is words, "quoted phrases" and prefixes (`deploy*`, `"blue gr"*`), all required
(AND). Words are runs of letters and digits, as the index splits text, so `foo-bar` is the
phrase "foo bar". A plain word matches any form of it (its stem: `keepers` finds "keeper"),
a quoted one only itself; the last word is also a prefix, as it is being typed (`lighthous`
finds "lighthouse"), and so is the last word of a quote left open (`"blue wh`). Anything else
(a lone `*`, a `*` inside a word) is InvalidInput: user text never reaches the index's own
query syntax."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from domain.errors import InvalidInput

MAX_QUERY = 500  # characters
MAX_TERMS = 16
MAX_LIMIT = 100
DEFAULT_LIMIT = 20
MAX_OFFSET = 10_000
# `a*` matches nearly every word: sixteen one-letter prefixes took 4 s on SQLite, two-letter
# ones a hundredth of that
MIN_PREFIX = 2
# the word being typed is a prefix from this many letters or digits on (shorter: the word)
TYPED_PREFIX = 2

# The marks around each match in a hit's snippet (control characters, which are removed
# from indexed text, so they cannot come from a message).
MARK_OPEN, MARK_CLOSE = "\x02", "\x03"

INDEXED_ROLES = ("user", "assistant")  # plus each conversation's title, role "title"


@dataclass(frozen=True)
class Term:
    """Consecutive words (one word, or a phrase) that match as they are, each its whole word;
    `prefix`: the last word matches the start of a word. `stem` (one word): also any word of
    the same stem, any form of it ("keepers" finds "keeper" and "keeping"), as the index's
    stemmer finds them; with `prefix`, a word that starts with it or has its stem."""

    words: tuple[str, ...]
    prefix: bool = False
    stem: bool = False


@dataclass(frozen=True)
class SearchQuery:
    """Terms that must all match the same entry. Words are lower case letters and digits."""

    terms: tuple[Term, ...]


@dataclass(frozen=True)
class Unsearched:
    """What a search did not look in: the inactive branches (every branch of a conversation
    but its active one), how many and in how many conversations."""

    branches: int = 0
    conversations: int = 0


@dataclass(frozen=True)
class SearchHit:
    conversation_id: str
    title: str
    message_index: int | None  # the message's index in the conversation detail; None: the title
    role: str  # "user", "assistant" or "title"
    snippet: str  # plain text around the match, matches between MARK_OPEN and MARK_CLOSE


_WORD = re.compile(r"[^\W_]+")
# a quoted phrase (closed, maybe with `*`, or open to the end: being typed), or a bare token
_TOKEN = re.compile(r'"([^"]*)(?:"(\*?)|$)|([^\s"]+)')


def words(text: str) -> tuple[str, ...]:
    """The words of a text, lower case, as the index splits them."""
    return tuple(_WORD.findall(text.lower()))


def _term(m: re.Match[str]) -> tuple[Term, bool] | None:
    """A token's term, and whether it is typed as it may go on (a bare word or phrase
    without `*`, or a quote left open); None for punctuation alone."""
    phrase, closed, bare = m.group(1), m.group(2), m.group(3)
    raw = phrase if phrase is not None else bare
    prefix = closed == "*"
    if bare is not None and bare.endswith("*"):
        raw, prefix = bare[:-1], True
    if "*" in raw:
        raise InvalidInput("'*' may only end a word or a phrase")
    found = words(raw)
    if not found:
        if prefix:
            raise InvalidInput("'*' must follow a word")
        return None  # punctuation only: nothing to match, as the index would ignore it
    if prefix and len(found[-1]) < MIN_PREFIX:
        raise InvalidInput(f"A prefix needs at least {MIN_PREFIX} letters or digits before '*'")
    plain = bare is not None and not prefix
    return Term(found, prefix, stem=plain and len(found) == 1), plain or (phrase is not None and closed is None)


def parse_query(text: object) -> SearchQuery:
    """The query as terms to match, or InvalidInput saying what is wrong with it."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("q is required")
    if len(text) > MAX_QUERY:
        raise InvalidInput(f"q is longer than {MAX_QUERY} characters")
    parsed = [t for t in map(_term, _TOKEN.finditer(text)) if t is not None]
    if not parsed:
        raise InvalidInput("The query has no words to search for")
    if len(parsed) > MAX_TERMS:
        raise InvalidInput(f"The query has more than {MAX_TERMS} terms")
    terms = [term for term, _ in parsed]
    last, typed = parsed[-1]
    if typed and len(last.words[-1]) >= TYPED_PREFIX:  # the word being typed
        terms[-1] = replace(last, prefix=True)
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
    unsearched: Unsearched = Unsearched()


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
