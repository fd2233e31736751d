"""The PostgreSQL checkpointer's side of the search index (see search.py): index each
checkpoint's new messages in its transaction, index titles and threads stored before the
index existed, and rebuild."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.base import Checkpoint
from psycopg import AsyncConnection, AsyncCursor

from adapters.langchain.messages import FILES_KEY, from_fields, to_domain
from adapters.langgraph.files import referenced
from adapters.langgraph.keys import INPUT_TASK
from adapters.langgraph.rows import input_fields, input_messages
from adapters.postgres import file_rows, message_rows
from adapters.postgres.search import ENTRY, claim_new_thread, entry, index_thread, indexed_state, reset
from adapters.search_entries import clean, restarts, with_file_texts

log = logging.getLogger(__name__)

# the messages of a thread's latest checkpoint (no row: no checkpoint; no blob: no messages)
LATEST_MESSAGES = (
    "SELECT b.type, b.blob, c.checkpoint_id FROM (SELECT * FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = '' "
    "ORDER BY checkpoint_id DESC LIMIT 1) c LEFT JOIN checkpoint_blobs b ON b.thread_id = c.thread_id "
    "AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = 'messages' "
    "AND b.version = c.checkpoint -> 'channel_versions' ->> 'messages'"
)
# the messages waiting on a checkpoint as pending input (adapters.langgraph.engine)
PENDING_INPUT = (
    "SELECT type, blob FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_ns = '' AND checkpoint_id = %s "
    "AND task_id = %s AND channel = 'messages' ORDER BY idx"
)
THREADS = "SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = ''"
UNSEEN_THREADS = THREADS + " AND thread_id NOT IN (SELECT conversation_id FROM search_threads)"
UNSEEN_TITLES = (
    "SELECT id, title FROM conversations c WHERE NOT EXISTS (SELECT 1 FROM search_entries e "
    "WHERE e.conversation_id = c.id AND e.message_index IS NULL)"
)


def _id(message: Any) -> str | None:
    return getattr(message, "id", None)


async def _texts(cur: AsyncCursor[Any], thread_id: str, digests: set[str]) -> dict[str, str]:
    return await file_rows.texts(cur, thread_id, sorted(digests)) if digests else {}


async def index_checkpoint(cur: AsyncCursor[Any], thread_id: str, checkpoint: Checkpoint) -> None:
    """In the checkpoint's transaction: index the messages it adds to the thread. A user
    message is indexed with its files' text, read before (the converter is synchronous)
    for the messages the index has not seen: a turn's new message, or every message of a
    thread that begins with earlier ones (a fork, an import)."""
    messages = checkpoint["channel_values"].get("messages")
    raw: list[BaseMessage] = messages if isinstance(messages, list) else []
    seen = await indexed_state(cur, thread_id)
    unseen = raw if restarts(seen, raw, _id) else raw[seen.raw_count :]
    found = await _texts(cur, thread_id, referenced([m for m in unseen if isinstance(m, HumanMessage)]))
    await index_thread(cur, thread_id, raw, with_file_texts(to_domain, lambda _: found), _id, seen=seen)


async def index_input(cur: AsyncCursor[Any], thread_id: str, writes: Sequence[tuple[str, Any]]) -> None:
    """In the transaction of a pending input (a new message saved as writes on the thread's
    latest checkpoint, indexed with it): index the messages it appends."""
    raw = input_messages(writes)
    found = await _texts(cur, thread_id, referenced(raw))
    await index_thread(cur, thread_id, raw, with_file_texts(to_domain, lambda _: found), _id, appended=True)


async def _index_stored(cur: AsyncCursor[Any], thread_id: str) -> None:
    """Index a claimed thread from its latest stored checkpoint."""
    await cur.execute(LATEST_MESSAGES, (thread_id,))
    row = await cur.fetchone()
    fields: list[dict[str, Any]] = []
    if row is not None:
        fields = await message_rows.plain_fields(cur, thread_id, row[0], row[1]) or []
        await cur.execute(PENDING_INPUT, (thread_id, row[2], INPUT_TASK))
        fields += input_fields(await cur.fetchall())
    named = {
        str(f["digest"])
        for fs in fields
        for f in ((fs.get("additional_kwargs") or {}).get(FILES_KEY) or [])
        if isinstance(f, dict) and "digest" in f
    }
    found = await _texts(cur, thread_id, named)
    await index_thread(
        cur, thread_id, fields, with_file_texts(from_fields, lambda _: found), lambda f: f.get("id"), seen_before=False
    )


async def index_missing(conn: AsyncConnection[Any]) -> int:
    """Index the titles and threads the index has never seen (stored before it existed),
    each thread in its own transaction. Returns how many threads."""
    async with conn.cursor() as cur:
        async with conn.transaction():  # FOR SHARE: a rename waits, then replaces the entry
            await cur.execute(UNSEEN_TITLES + " FOR SHARE OF c")
            titles = await cur.fetchall()
            if titles:
                await cur.executemany(ENTRY, [entry(cid, None, "title", clean(title)) for cid, title in titles])
        await cur.execute(UNSEEN_THREADS)
        threads = [r[0] for r in await cur.fetchall()]
        for thread_id in threads:
            async with conn.transaction():
                if await claim_new_thread(cur, thread_id):
                    await _index_stored(cur, thread_id)
    if titles or threads:
        log.info("search index: indexed %d existing title(s) and %d thread(s)", len(titles), len(threads))
    return len(threads)


async def rebuild(conn: AsyncConnection[Any]) -> int:
    """Empty the index and index every title and thread again, in one transaction.
    Returns the number of entries."""
    async with conn.transaction(), conn.cursor() as cur:
        await reset(cur)
        await cur.execute(THREADS)
        for (thread_id,) in await cur.fetchall():
            await claim_new_thread(cur, thread_id)
            await _index_stored(cur, thread_id)
        await cur.execute("SELECT count(*) FROM search_entries")
        row = await cur.fetchone()
    return int(row[0]) if row else 0
