"""Each message of a thread stored once, in its own row.

A checkpoint holds the whole thread and a turn writes three, so SqliteSaver stored every
message three times a turn, again and again: at turn 200 a turn wrote 944 KiB to the file
(238 KiB at turn 2), and the writer's CPU grew with it. Here a checkpoint of the main graph
keeps its message list as one msgpack ext value (`EXT_MESSAGE_REFS`) holding a 16-byte digest
per message, its type is `msgpack+refs`, and each message is a row of `checkpoint_messages`
(thread, namespace, digest → the message's msgpack), written by the first checkpoint that
holds it.

- A row a stored checkpoint refers to is never deleted. Retention, in the transaction that
  prunes, deletes the rows no remaining checkpoint refers to: messages an edit or a branch
  switch dropped. In an append-only thread there are none, which a prefix test shows without
  decoding anything.
- A reader resolves a checkpoint in one read transaction: its row, then the thread's rows.
- Checkpoints stored before this (type `msgpack`) are read as they are.
"""

from __future__ import annotations

import hashlib
import operator
import sqlite3
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


def stored_rows(cur: sqlite3.Cursor, thread_id: str, ns: str) -> dict[bytes, bytes]:
    sql = "SELECT digest, message FROM checkpoint_messages WHERE thread_id = ? AND checkpoint_ns = ?"
    return dict(cur.execute(sql, (thread_id, ns)).fetchall())


def packed_list(refs: bytes, rows: Mapping[bytes, bytes]) -> bytes:
    """The msgpack of the message list the digests stand for."""
    try:
        parts = [rows[d] for d in split(refs)]
    except KeyError:
        raise sqlite3.DatabaseError("a checkpoint refers to a message that is not stored") from None
    return array_header(len(parts)) + b"".join(parts)


def insert(cur: sqlite3.Cursor, thread_id: str, ns: str, rows: Iterable[Row]) -> int:
    """Store the rows not stored yet; returns the bytes offered."""
    values = [(thread_id, ns, d, packed) for d, packed in rows]
    cur.executemany(
        "INSERT OR IGNORE INTO checkpoint_messages (thread_id, checkpoint_ns, digest, message) VALUES (?, ?, ?, ?)",
        values,
    )
    return sum(len(v[3]) for v in values)


def has_checkpoint(cur: sqlite3.Cursor, thread_id: str, ns: str, checkpoint_id: str) -> bool:
    sql = "SELECT 1 FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
    return cur.execute(sql, (thread_id, ns, checkpoint_id)).fetchone() is not None


def _refs_of(cur: sqlite3.Cursor, thread_id: str, ns: str, ids: Iterable[str]) -> list[bytes]:
    sql = (
        "SELECT checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? "
        f"AND type = '{REFS_TYPE}'"
    )
    out = []
    for checkpoint_id in ids:
        row = cur.execute(sql, (thread_id, ns, checkpoint_id)).fetchone()
        refs = refs_in(row[0]) if row else None
        if refs is not None:
            out.append(refs)
    return out


def collect(
    cur: sqlite3.Cursor, thread_id: str, ns: str, pruned: list[str], kept: list[str], adding: bytes | None
) -> int:
    """Before the checkpoints `pruned` are deleted: delete the message rows only they
    refer to, given the checkpoints `kept` and the digests of one being added. Returns how many."""
    gone = _refs_of(cur, thread_id, ns, pruned)
    if not gone:
        return 0
    staying = [adding] if adding else []
    if all(any(s.startswith(g) for s in staying) for g in gone):
        return 0  # append-only: the new checkpoint holds every message the pruned ones did
    staying += _refs_of(cur, thread_id, ns, kept)
    referenced = {d for refs in staying for d in split(refs)}
    garbage = {d for refs in gone for d in split(refs)} - referenced
    cur.executemany(
        "DELETE FROM checkpoint_messages WHERE thread_id = ? AND checkpoint_ns = ? AND digest = ?",
        [(thread_id, ns, d) for d in garbage],
    )
    return len(garbage)


@dataclass(frozen=True)
class Plan:
    """How a checkpoint's messages are stored: its digests, the rows of the messages the
    checkpoint `base` did not hold, and every row (for when `base` is gone)."""

    refs: bytes
    added: list[Row]
    base: str | None
    every: Callable[[], list[Row] | None]


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


def store(cur: sqlite3.Cursor, thread_id: str, ns: str, planned: Plan) -> int:
    """In the checkpoint's transaction, after pruning: its rows not stored yet. The rows of
    `base` are there while `base` is (a stored checkpoint's rows are never deleted)."""
    rows = planned.added  # every row when there is no base
    if planned.base is not None and not has_checkpoint(cur, thread_id, ns, planned.base):
        rows = planned.every() or []
    return insert(cur, thread_id, ns, rows)


def resolve(values: dict[str, Any], load: Any) -> dict[str, Any]:
    """Put the messages back in a decoded checkpoint's channel values, in place;
    `load(refs)` gives the list."""
    refs = values.get("messages")
    if isinstance(refs, MessageRefs):
        values["messages"] = load(refs)
    return values
