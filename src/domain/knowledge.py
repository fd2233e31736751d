"""Knowledge (issue 45 item 3): named collections of documents per user, split into
passages (domain.passages) and searched by the words of a message that names them with
`#name`; the best passages are sent with the message, each under its citation
(`[file.md:12-30]`: the file and its lines) that the answer repeats and the page links.

Pure rules over plain values: names, the `#name` mentions, which candidates fit a share
of the prompt, and how they are written for the model. Finding candidates is a port's
(ports.knowledge.KnowledgeStore) and ordering them a ranker's (ports.knowledge.Ranker)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from domain.errors import ErrorCode, InvalidInput, SophosError


class CollectionNotFound(SophosError):
    """Raised when a name (or a file in it) names none of the user's knowledge collections
    (another user's included: it answers as an unknown one)."""

    code = ErrorCode.NOT_FOUND
    default_message = "No such collection"


NAME_MAX = 64
FILE_NAME_MAX = 255
MAX_COLLECTIONS = 200  # of one user
MAX_FILES = 2000  # of one collection
MAX_MENTIONS = 8  # collections one message attaches
CANDIDATES = 50  # full-text matches a ranker orders (it sees no more)
FLOOR = 0.2  # of the best score: a passage scoring less matches a word or two by chance
NOTE = "[Passages from your knowledge collections, best first. Cite each one you use as written above it, e.g. {example}]"
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_MENTION = re.compile(r"(?<![\w#/&])#([A-Za-z0-9][A-Za-z0-9_-]{0,63})\b")


def check_name(name: object) -> str:
    """A collection's name: lower-case letters, digits, `-` and `_`, at most 64, starting
    with a letter or digit (what `#name` in a message can name)."""
    if not isinstance(name, str) or _NAME.fullmatch(name) is None:
        raise InvalidInput(
            "A collection's name is 1 to 64 lower-case letters, digits, '-' or '_', starting with a letter or digit"
        )
    return name


def check_file_name(name: object) -> str:
    if not isinstance(name, str) or not name or len(name) > FILE_NAME_MAX or any(c in name for c in "/\\\n\r\0[]"):
        raise CollectionNotFound("No such file")
    return name


def mentions(text: str) -> tuple[str, ...]:
    """The collections a message names with `#name` (lower-cased, each once, in order, at
    most MAX_MENTIONS); a `#` inside a word, a URL's fragment or an HTML entity is none."""
    found = dict.fromkeys(m.lower() for m in _MENTION.findall(text))
    return tuple(found)[:MAX_MENTIONS]


@dataclass(frozen=True)
class Collection:
    name: str
    files: int
    passages: int
    created_at: datetime


@dataclass(frozen=True)
class KnowledgeFile:
    """A file of a collection: its name, the sha256 of its bytes, its size, type, and the
    passages it was split into."""

    name: str
    digest: str
    size: int
    media_type: str
    passages: int
    updated_at: datetime


@dataclass(frozen=True)
class Chunk:
    """Lines [first, last] (1-based) of a file, as split by domain.passages."""

    first: int
    last: int
    text: str


@dataclass(frozen=True)
class Candidate:
    """A passage found for a query: where it is, its text, and its score (higher is better)."""

    collection: str
    file: str
    first: int
    last: int
    text: str
    score: float

    @property
    def citation(self) -> str:
        return cite(self.file, self.first, self.last)


@dataclass(frozen=True)
class Cited:
    """A passage a model call was sent, for the page to link a citation to."""

    collection: str
    file: str
    first: int
    last: int

    @property
    def citation(self) -> str:
        return cite(self.file, self.first, self.last)


def cite(file: str, first: int, last: int) -> str:
    return f"[{file}:{first}-{last}]" if last > first else f"[{file}:{first}]"


def fit(candidates: Sequence[Candidate], max_chars: int) -> tuple[Candidate, ...]:
    """The best candidates (in the order given: best first) that fit `max_chars` together
    with their citations and the note; a passage longer than what is left is skipped, and
    so is one scoring under FLOOR of the best."""
    room = max_chars - len(NOTE) - 40
    chosen: list[Candidate] = []
    best = max((c.score for c in candidates), default=0.0)
    for c in candidates:
        if c.score < best * FLOOR:
            continue
        cost = len(c.text) + len(c.citation) + 2
        if cost <= room:
            chosen.append(c)
            room -= cost
        if room < 80:
            break
    return tuple(chosen)


def knowledge_block(chosen: Sequence[Candidate], names: Sequence[str]) -> str:
    """What a message that names collections is sent with: each chosen passage under its
    citation, then the note; or a line saying nothing matched."""
    if not chosen:
        listed = ", ".join(f"#{n}" for n in names)
        return f"[No passage of {listed} matches this message.]"
    parts = [f"{c.citation} (#{c.collection})\n{c.text}" for c in chosen]
    return "\n\n".join([*parts, NOTE.format(example=chosen[0].citation)])
