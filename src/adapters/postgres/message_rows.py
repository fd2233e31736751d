"""The PostgreSQL side of messages stored once (the format: adapters.storage.message_refs).

The official saver stores a channel's value as one blob per version. Here each message of
the main graph is a row of `checkpoint_messages`, identified by its digest and numbered in
the order its thread first stored it (`seq`), written in the checkpoint's transaction by the
first checkpoint that holds it; the `messages` blob holds runs of those numbers (type
`msgpack+seqs`): an append-only thread's blob is one run, a few bytes at any length, so a
turn writes what it adds and nothing that grows with the thread. A row is deleted with the
last blob that refers to it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import AsyncCursor

from adapters.langgraph.rows import plain_list
from adapters.storage.message_refs import (
    SEQS_TYPE,
    DanglingMessage,
    MessageSeqs,
    Plan,
    array_header,
    split,
    unpack_seqs,
    unreferenced,
)

Cursor = AsyncCursor[Any]

# the runs of the thread's messages blobs still stored (after the retention's deletes)
KEPT = (
    "SELECT blob FROM checkpoint_blobs WHERE thread_id = %s AND checkpoint_ns = %s AND channel = 'messages' "
    f"AND type = '{SEQS_TYPE}'"
)


async def rows_of(cur: Cursor, thread_id: str, ns: str, seqs: Sequence[MessageSeqs]) -> dict[int, bytes]:
    """The stored rows of the numbers in `seqs` (several blobs of one thread)."""
    wanted = sorted({n for s in seqs for n in s.numbers()})
    if not wanted:
        return {}
    await cur.execute(
        "SELECT seq, message FROM checkpoint_messages WHERE thread_id = %s AND checkpoint_ns = %s AND seq = ANY(%s)",
        (thread_id, ns, wanted),
    )
    return {int(n): bytes(m) for n, m in await cur.fetchall()}


def packed_list(seqs: MessageSeqs, rows: dict[int, bytes]) -> bytes:
    """The msgpack of the message list the numbers stand for."""
    try:
        parts = [rows[n] for n in seqs.numbers()]
    except KeyError:
        raise DanglingMessage("a checkpoint refers to a message that is not stored") from None
    return array_header(len(parts)) + b"".join(parts)


class Numbering:
    """The numbers of the messages of the latest checkpoint this process stored for each
    thread, to number the next one's without a read: valid while that checkpoint is stored
    (a stored checkpoint's rows are never deleted, and a row keeps its number)."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._items: dict[tuple[str, str], tuple[str, list[int]]] = {}

    def get(self, thread_id: str, ns: str, checkpoint_id: str | None) -> list[int] | None:
        hit = self._items.get((thread_id, ns))
        return hit[1] if hit is not None and hit[0] == checkpoint_id else None

    def remember(self, thread_id: str, ns: str, checkpoint_id: str, numbers: list[int]) -> None:
        self._items.pop((thread_id, ns), None)
        self._items[(thread_id, ns)] = (checkpoint_id, numbers)
        if len(self._items) > self.size:
            del self._items[next(iter(self._items))]

    def forget(self, thread_id: str) -> None:
        for key in [k for k in self._items if k[0] == thread_id]:
            del self._items[key]


async def store(cur: Cursor, thread_id: str, ns: str, planned: Plan, known: list[int] | None) -> list[int]:
    """In the checkpoint's transaction, before retention: its rows not stored yet, numbered
    after the thread's last. Returns the number of each of its messages, in order. `known`:
    the numbers of `planned.base`'s messages, if this process knows them."""
    digests = split(planned.refs)
    shared = len(digests) - len(planned.added)  # the messages the base holds, by digest
    base_stored = False
    if planned.base is not None:
        await cur.execute(
            "SELECT 1 FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s",
            (thread_id, ns, planned.base),
        )
        base_stored = await cur.fetchone() is not None
    prefix = known[:shared] if base_stored and known is not None and len(known) >= shared else None
    rows = dict(planned.added if prefix is not None else planned.rows(base_stored))
    if prefix is None:
        rows.update(planned.every() or [])
        prefix = []
    lookup = list(dict.fromkeys(digests[len(prefix) :]))
    numbers: dict[bytes, int] = {}
    if lookup:
        await cur.execute(
            "SELECT digest, seq FROM checkpoint_messages WHERE thread_id = %s AND checkpoint_ns = %s AND digest = ANY(%s)",
            (thread_id, ns, lookup),
        )
        numbers = {bytes(d): int(n) for d, n in await cur.fetchall()}
    new = [d for d in lookup if d not in numbers]
    if new:
        await cur.execute(
            "SELECT coalesce(max(seq), 0) FROM checkpoint_messages WHERE thread_id = %s AND checkpoint_ns = %s",
            (thread_id, ns),
        )
        row = await cur.fetchone()
        last = int(row[0]) if row else 0
        numbers.update((d, last + i) for i, d in enumerate(new, 1))
        await cur.executemany(
            "INSERT INTO checkpoint_messages (thread_id, checkpoint_ns, digest, seq, message) VALUES (%s, %s, %s, %s, %s)",
            [(thread_id, ns, d, numbers[d], rows[d]) for d in new],
        )
    return prefix + [numbers[d] for d in digests[len(prefix) :]]


async def collect(cur: Cursor, thread_id: str, ns: str, gone: Sequence[bytes], adding: MessageSeqs | None) -> int:
    """After the retention deleted the messages blobs `gone`: delete the rows no stored blob
    refers to any more. Returns how many."""
    kept: list[MessageSeqs] = []
    deleted = [unpack_seqs(g) for g in gone]
    if deleted and unreferenced(deleted, adding, lambda: ()):
        await cur.execute(KEPT, (thread_id, ns))
        kept = [unpack_seqs(bytes(r[0])) for r in await cur.fetchall()]
    dropped = unreferenced(deleted, adding, lambda: kept)
    if dropped:
        await cur.execute(
            "DELETE FROM checkpoint_messages WHERE thread_id = %s AND checkpoint_ns = %s AND seq = ANY(%s)",
            (thread_id, ns, sorted(dropped)),
        )
    return len(dropped)


async def plain_fields(cur: Cursor, thread_id: str, type_: str | None, blob: bytes | None) -> list[dict[str, Any]] | None:
    """A stored `messages` blob of the thread's main graph as plain field dicts, its rows
    read with `cur` (in the transaction that read the blob); None if it is not msgpack."""
    if type_ is None or blob is None:
        return None
    if type_ == SEQS_TYPE:
        seqs = unpack_seqs(bytes(blob))
        packed = packed_list(seqs, await rows_of(cur, thread_id, "", [seqs]))
        return plain_list("msgpack", packed, lambda _refs: {})
    return plain_list(type_, bytes(blob), lambda _refs: {})
