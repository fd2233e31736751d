"""Each message of a thread stored once, in its own row: the format, shared by every saver.

A checkpoint holds the whole thread and a turn writes several, so a saver that stores the
checkpoint as it is stores every message again and again (quadratic growth). Here a
checkpoint of the main graph keeps its message list as one msgpack ext value
(`EXT_MESSAGE_REFS`) holding a 16-byte digest per message, its type is `msgpack+refs`, and
each message is a row (thread, namespace, digest -> the message's msgpack) written by the
first checkpoint that holds it.

- A row a stored checkpoint refers to is never deleted. Retention, in the transaction that
  prunes, deletes the rows no remaining checkpoint refers to (`garbage`): messages an edit
  or a branch switch dropped. In an append-only thread there are none, which a prefix test
  shows without decoding anything.
- A reader resolves a checkpoint in one read transaction: its row, then its message rows.
- Checkpoints stored before this (type `msgpack`) are read as they are.

Only the format and the decisions live here; each backend runs its own SQL.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ormsgpack

EXT_MESSAGE_REFS = 64  # LangGraph's own ext codes are 0-7
REFS_TYPE = "msgpack+refs"
DIGEST_SIZE = 16

Row = tuple[bytes, bytes]  # (digest, the message's msgpack)


class MessageRefs(bytes):
    """What a decoded `msgpack+refs` checkpoint holds in place of its messages."""


class DanglingMessage(LookupError):
    """Raised when a stored checkpoint refers to a message row that is not stored."""


def digest(packed: bytes) -> bytes:
    return hashlib.blake2b(packed, digest_size=DIGEST_SIZE).digest()


def split(refs: bytes) -> list[bytes]:
    return [refs[i : i + DIGEST_SIZE] for i in range(0, len(refs), DIGEST_SIZE)]


def array_header(n: int) -> bytes:
    if n < 16:
        return bytes([0x90 | n])
    if n < 1 << 16:
        return b"\xdc" + n.to_bytes(2, "big")
    return b"\xdd" + n.to_bytes(4, "big")


def refs_in(blob: bytes) -> bytes | None:
    """The digests a `msgpack+refs` checkpoint holds, without decoding anything else."""
    found: list[bytes] = []

    def hook(code: int, data: bytes) -> None:
        if code == EXT_MESSAGE_REFS:
            found.append(data)

    ormsgpack.unpackb(blob, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
    return found[0] if found else None


def packed_list(refs: bytes, rows: Mapping[bytes, bytes]) -> bytes:
    """The msgpack of the message list the digests stand for."""
    try:
        parts = [rows[d] for d in split(refs)]
    except KeyError:
        raise DanglingMessage("a checkpoint refers to a message that is not stored") from None
    return array_header(len(parts)) + b"".join(parts)


def garbage(gone: Sequence[bytes], adding: bytes | None, kept: Callable[[], Iterable[bytes]]) -> set[bytes]:
    """The digests no checkpoint refers to once the references `gone` are deleted, given
    the references of one being added and (asked only when needed) those `kept`."""
    if not gone:
        return set()
    if adding is not None and all(adding.startswith(g) for g in gone):
        return set()  # append-only: the new checkpoint holds every message the pruned ones did
    referenced = {d for refs in [*([adding] if adding else []), *kept()] for d in split(refs)}
    return {d for refs in gone for d in split(refs)} - referenced


@dataclass(frozen=True)
class Plan:
    """How a checkpoint's messages are stored: its digests, the rows of the messages the
    checkpoint `base` did not hold, and every row (for when `base` is gone)."""

    refs: bytes
    added: list[Row]
    base: str | None
    every: Callable[[], list[Row] | None]

    def rows(self, base_stored: bool) -> list[Row]:
        """The rows to offer: those added, or every row when `base` is no longer stored
        (the rows of a stored checkpoint are never deleted, so `base`'s are there while it is)."""
        if self.base is not None and not base_stored:
            return self.every() or []
        return self.added


RowsOf = Callable[[Sequence[Any]], "list[Row] | None"]


def plan(messages: Any, base: str | None, base_messages: Sequence[Any], base_refs: bytes | None, rows_of: RowsOf) -> Plan | None:
    """None: the list stays inline (not a list of messages with ids). `base`: the latest
    checkpoint this process stored for the thread, with its message objects and digests;
    the messages it shares with this one (the same objects, in order) keep their digests."""
    if not isinstance(messages, list) or not messages:
        return None
    same = 0
    if base_refs is not None and base_messages:
        shared = list(map(operator.is_, base_messages, messages))
        same = shared.index(False) if False in shared else len(shared)
    added = rows_of(messages[same:])
    if added is None:
        return None
    refs = (base_refs or b"")[: same * DIGEST_SIZE] + b"".join(d for d, _ in added)
    return Plan(refs, added, base if same else None, lambda: rows_of(messages))


def resolve(values: dict[str, Any], load: Callable[[MessageRefs], Any]) -> dict[str, Any]:
    """Put the messages back in a decoded checkpoint's channel values, in place;
    `load(refs)` gives the list."""
    refs = values.get("messages")
    if isinstance(refs, MessageRefs):
        values["messages"] = load(refs)
    return values


# --- by position: a thread's messages numbered in the order they were first stored -------
# A checkpoint that refers to its messages by digest holds 16 bytes per message, so a long
# thread's checkpoints still grow with it (10 KB each at 600 messages). Numbered, an
# append-only thread's message list is one run of consecutive numbers: [[1, n]].
SEQS_TYPE = "msgpack+seqs"


class MessageSeqs(tuple[tuple[int, int], ...]):
    """What a decoded `msgpack+seqs` blob holds in place of its messages: runs of
    (first number, count), in order."""

    def numbers(self) -> list[int]:
        return [n for first, count in self for n in range(first, first + count)]


def as_runs(numbers: Sequence[int]) -> MessageSeqs:
    runs: list[tuple[int, int]] = []
    for n in numbers:
        if runs and runs[-1][0] + runs[-1][1] == n:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((n, 1))
    return MessageSeqs(runs)


def pack_seqs(seqs: MessageSeqs) -> bytes:
    return ormsgpack.packb([list(r) for r in seqs])


def unpack_seqs(blob: bytes) -> MessageSeqs:
    return MessageSeqs((int(a), int(b)) for a, b in ormsgpack.unpackb(blob))


def unreferenced(gone: Sequence[MessageSeqs], adding: MessageSeqs | None, kept: Callable[[], Iterable[MessageSeqs]]) -> set[int]:
    """The numbers no blob refers to once the blobs `gone` are deleted, given the one being
    added and (asked only when needed) those `kept`."""
    if not gone:
        return set()
    added = set(adding.numbers()) if adding else set()
    dropped = {n for g in gone for n in g.numbers()} - added
    if not dropped:
        return set()  # append-only: the new blob holds every message the deleted ones did
    return dropped - {n for k in kept() for n in k.numbers()}
