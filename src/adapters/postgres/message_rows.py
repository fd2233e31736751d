"""The PostgreSQL side of messages stored once (the format: adapters.storage.message_refs).

The official saver stores a channel's value as one blob per version; here the `messages`
channel's blob holds the digests of its messages (type `msgpack+refs`) and each message is
a row of `checkpoint_messages`, written in the checkpoint's transaction by the first
checkpoint that holds it and deleted with the last blob that refers to it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from psycopg import AsyncCursor

from adapters.langgraph.rows import plain_list
from adapters.storage.message_refs import REFS_TYPE, Plan, Row, garbage, split

Cursor = AsyncCursor[Any]

# the references of the thread's messages blobs still stored (after the retention's deletes)
KEPT = (
    "SELECT blob FROM checkpoint_blobs WHERE thread_id = %s AND checkpoint_ns = %s AND channel = 'messages' "
    f"AND type = '{REFS_TYPE}'"
)


async def rows_of(cur: Cursor, thread_id: str, ns: str, refs: Iterable[bytes]) -> dict[bytes, bytes]:
    """The stored rows of the digests in `refs` (several reference lists of one thread)."""
    wanted = list({d for r in refs for d in split(r)})
    if not wanted:
        return {}
    await cur.execute(
        "SELECT digest, message FROM checkpoint_messages WHERE thread_id = %s AND checkpoint_ns = %s "
        "AND digest = ANY(%s)",
        (thread_id, ns, wanted),
    )
    return {bytes(d): bytes(m) for d, m in await cur.fetchall()}


async def store(cur: Cursor, thread_id: str, ns: str, planned: Plan) -> int:
    """In the checkpoint's transaction, before retention: its rows not stored yet; returns
    the bytes offered."""
    base_stored = False
    if planned.base is not None:
        await cur.execute(
            "SELECT 1 FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s",
            (thread_id, ns, planned.base),
        )
        base_stored = await cur.fetchone() is not None
    rows = planned.rows(base_stored)
    await insert(cur, thread_id, ns, rows)
    return sum(len(packed) for _, packed in rows)


async def insert(cur: Cursor, thread_id: str, ns: str, rows: Sequence[Row]) -> None:
    if rows:
        await cur.executemany(
            "INSERT INTO checkpoint_messages (thread_id, checkpoint_ns, digest, message) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            [(thread_id, ns, d, packed) for d, packed in rows],
        )


async def collect(cur: Cursor, thread_id: str, ns: str, gone: Sequence[bytes], adding: bytes | None) -> int:
    """After the retention deleted the messages blobs `gone`: delete the rows no stored blob
    refers to any more. Returns how many."""
    kept: list[bytes] = []
    if gone and not (adding is not None and all(adding.startswith(g) for g in gone)):
        await cur.execute(KEPT, (thread_id, ns))
        kept = [bytes(r[0]) for r in await cur.fetchall()]
    dropped = garbage(gone, adding, lambda: kept)
    if dropped:
        await cur.execute(
            "DELETE FROM checkpoint_messages WHERE thread_id = %s AND checkpoint_ns = %s AND digest = ANY(%s)",
            (thread_id, ns, list(dropped)),
        )
    return len(dropped)


async def plain_fields(cur: Cursor, thread_id: str, type_: str | None, blob: bytes | None) -> list[dict[str, Any]] | None:
    """A stored `messages` blob of the thread's main graph as plain field dicts, its rows
    read with `cur` (in the transaction that read the blob); None if it is not msgpack."""
    if type_ is None or blob is None:
        return None
    rows: dict[bytes, bytes] = {}
    if type_ == REFS_TYPE:
        rows = await rows_of(cur, thread_id, "", [bytes(blob)])
    return plain_list(type_, bytes(blob), lambda _refs: rows)

