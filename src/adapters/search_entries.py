"""What a thread's new checkpoint adds to a search index, shared by the SQLite and the
PostgreSQL index: entries for the messages the index has not seen yet, numbered as the
conversation detail numbers them, and how far the thread is indexed afterwards."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from domain.model import Message, UserMessage, searchable_text
from ports.search import INDEXED_ROLES, MARK_CLOSE, MARK_OPEN

T = TypeVar("T")


@dataclass(frozen=True)
class Indexed:
    """How far a thread is indexed: the stored messages seen (`raw_count`, including those
    the detail does not show), the detail index of the next message, the last one's id."""

    raw_count: int = 0
    next_index: int = 0
    last_id: str | None = None


@dataclass(frozen=True)
class ThreadUpdate:
    restart: bool  # drop the thread's message entries first
    entries: list[tuple[int, str, str]]  # (message_index, role, body)
    indexed: Indexed


FILE_SEARCH_CHARS = 100_000  # of a file's text, indexed with the message that carries it


def with_file_texts(
    convert: Callable[[T], Message | None], texts: Callable[[Sequence[str]], Mapping[str, str]]
) -> Callable[[T], Message | None]:
    """`convert`, a user message's text followed by its files' text (up to
    FILE_SEARCH_CHARS each) as `texts` gives them by digest: a search finds a file's content."""

    def enriched(item: T) -> Message | None:
        m = convert(item)
        if isinstance(m, UserMessage) and m.attachments:
            found = texts([a.digest for a in m.attachments])
            extra = [found[a.digest][:FILE_SEARCH_CHARS] for a in m.attachments if found.get(a.digest)]
            if extra:
                m = replace(m, content="\n".join([m.content, *extra]))
        return m

    return enriched


def clean(text: str) -> str:
    """Indexed text without the snippet marks (so a mark in a snippet is always ours)."""
    return text.replace(MARK_OPEN, " ").replace(MARK_CLOSE, " ")


def restarts(seen: Indexed | None, raw: Sequence[T], id_of: Callable[[T], str | None]) -> bool:
    """Whether the thread's earlier messages changed since `seen` (fewer, or a different last
    one): it is then indexed again from the start."""
    if seen is None:
        return False
    start = seen.raw_count
    return start > len(raw) or (start > 0 and id_of(raw[start - 1]) != seen.last_id)


def thread_update(
    seen: Indexed | None,
    raw: Sequence[T],
    convert: Callable[[T], Message | None],
    id_of: Callable[[T], str | None],
    appended: bool = False,
) -> ThreadUpdate | None:
    """The entries of the messages after those indexed last time (`seen`; None: never). A
    thread whose earlier messages changed (fewer, or a different last one) is indexed again
    from the start. None when there is nothing to write. `appended`: `raw` holds only
    messages that follow those indexed (a pending input on the checkpoint indexed last);
    None if the thread was never indexed (its next checkpoint indexes it whole)."""
    base = 0
    if appended:
        if seen is None or seen.raw_count == 0 or not raw:
            return None
        restart, start, index, base = False, 0, seen.next_index, seen.raw_count
    else:
        start, index = (seen.raw_count, seen.next_index) if seen else (0, 0)
        restart = restarts(seen, raw, id_of)
        if restart:
            start, index = 0, 0
        elif seen is not None and start == len(raw):
            return None
    entries: list[tuple[int, str, str]] = []
    for item in raw[start:]:
        message = convert(item)
        if message is None:
            continue
        body = searchable_text(message)
        if message.role in INDEXED_ROLES and body.strip():
            entries.append((index, message.role, clean(body)))
        index += 1
    return ThreadUpdate(restart, entries, Indexed(base + len(raw), index, id_of(raw[-1]) if raw else None))
