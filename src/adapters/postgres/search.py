"""SearchIndex on PostgreSQL full-text search (MIGRATION_SEARCH in database.py).

`search_entries` holds one row per title and per indexed message with its words as a
tsvector under a GIN index. Titles are written by the run store in the transaction that
creates or renames the conversation; messages by the checkpointer in the transaction of the
checkpoint that adds them (`index_thread`), with `search_threads` saying how far each thread
is indexed. Deleting a thread or a conversation deletes its entries in the same transaction.

Lock order, so that a rebuild (which locks both tables) never deadlocks with a writer:
`search_threads` before `search_entries`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from psycopg import AsyncCursor, sql

from adapters.postgres.database import PostgresDatabase
from adapters.postgres.search_text import MAX_TERMS_BYTES, TsQueries, stem_terms, terms, tsquery
from adapters.search_entries import Indexed, clean, thread_update
from adapters.search_text import snippet
from domain.model import Message
from ports.search import SearchHit, SearchIndex, SearchQuery, Unsearched

T = TypeVar("T")

# As on SQLite: ranking reads every matching entry's tsvector, so a word found in nearly
# every message would be slow on a big database; only the most recent RANKED matches are
# ranked. ts_rank's normalization 16 divides by 1 + the log of the entry's number of
# distinct words: like bm25, it prefers short entries and entries that repeat a query word
# (normalization 1, by length, ranks "a a b" above "a a a b"). An entry's rank is the sum of
# its two columns', each ranked by the terms on it (`stems`, without positions, counts a stem
# once). Ties go to the older entry.
# Snippets are made for the page only; an entry without a conversation row (a thread
# written without one; a delete removes its entries with the row) is left out of the page.
# The query is sent with its values as literals, not parameters: statements are prepared
# (database.connection_options), and after five runs PostgreSQL may switch a prepared search
# to a generic plan that cannot know how common the word is (500 ms instead of 4 for a word
# in nearly every message, measured on 200,000 entries).
RANKED = 2000
SEARCH_SQL = """
WITH matched AS (
    SELECT e.id, {rank} AS rank
    FROM search_entries e
    WHERE {match}{mine}
    ORDER BY e.id DESC LIMIT {ranked}
), page AS (
    SELECT id, rank FROM matched ORDER BY rank DESC, id LIMIT {limit} OFFSET {offset}
)
SELECT e.conversation_id, c.title, e.message_index, e.role, e.body
FROM page p JOIN search_entries e ON e.id = p.id JOIN conversations c ON c.id = e.conversation_id
ORDER BY p.rank DESC, p.id
"""
ENTRY = (
    "INSERT INTO search_entries (conversation_id, message_index, role, body, words, stems) "
    "VALUES (%s, %s, %s, %s, to_tsvector('simple', %s), strip(to_tsvector('simple', %s)))"
)
# the inactive branches (every branch but the active one: a thread never forked has no rows)
UNSEARCHED = "SELECT count(*), count(DISTINCT b.conversation_id) FROM branches b WHERE NOT b.active"
OWNED_UNSEARCHED = UNSEARCHED + (" AND EXISTS (SELECT 1 FROM conversations c WHERE c.id = b.conversation_id AND c.owner = %s)")
STATE = "SELECT raw_count, next_index, last_id FROM search_threads WHERE conversation_id = %s FOR UPDATE"
# a thread seen for the first time: its row, created and locked (or locked, if another
# transaction created it meanwhile)
CLAIM = (
    "INSERT INTO search_threads (conversation_id, raw_count, next_index, last_id) VALUES (%s, 0, 0, NULL) "
    "ON CONFLICT (conversation_id) DO UPDATE SET raw_count = search_threads.raw_count "
    "RETURNING raw_count, next_index, last_id"
)
SAVE_STATE = "UPDATE search_threads SET raw_count = %s, next_index = %s, last_id = %s WHERE conversation_id = %s"


def entry(conversation_id: str, message_index: int | None, role: str, body: str) -> tuple[object, ...]:
    """The parameters of ENTRY."""
    words = terms(body)
    return (conversation_id, message_index, role, body, words, stem_terms(words))


def _on(column: str, query: str) -> sql.Composable:
    return sql.SQL("e.{} @@ to_tsquery('simple', {})").format(sql.Identifier(column), sql.Literal(query))


def conditions(q: TsQueries) -> tuple[sql.Composable, sql.Composable]:
    """The WHERE clause and the rank of a query (each part a literal, see SEARCH_SQL)."""
    parts = [_on(column, text) for column, text in (("words", q.words), ("stems", q.stems)) if text]
    parts += [sql.SQL("({} OR {})").format(_on("words", w), _on("stems", s)) for w, s in q.either]
    ranks = [
        sql.SQL("ts_rank(e.{}, to_tsquery('simple', {}), 16)").format(sql.Identifier(column), sql.Literal(text))
        for column, text in zip(("words", "stems"), q.ranked(), strict=True)
        if text
    ]
    return sql.SQL(" AND ").join(parts), sql.SQL(" + ").join(ranks)


async def index_title(cur: AsyncCursor[Any], conversation_id: str, title: str) -> None:
    """In the transaction that creates or renames the conversation: its title entry."""
    await cur.execute("DELETE FROM search_entries WHERE conversation_id = %s AND message_index IS NULL", (conversation_id,))
    await cur.execute(ENTRY, entry(conversation_id, None, "title", clean(title)))


async def index_thread(
    cur: AsyncCursor[Any],
    thread_id: str,
    raw: Sequence[T],
    convert: Callable[[T], Message | None],
    id_of: Callable[[T], str | None],
    seen_before: bool = True,
    appended: bool = False,
    seen: Indexed | None = None,
) -> None:
    """In the checkpoint's transaction: index the messages of the thread that the index
    has not seen (see adapters.search_entries). The thread's row in `search_threads` stays
    locked until the transaction ends, so two writers of one thread take turns.
    `seen_before` False: the caller has just claimed the thread (nothing indexed yet).
    `appended`: `raw` holds only the messages a pending input appends. `seen`: the state
    the caller read (indexed_state), in this transaction."""
    if seen is None:
        seen = await indexed_state(cur, thread_id) if seen_before else Indexed()
    update = thread_update(seen, raw, convert, id_of, appended)
    if update is None:
        return
    if update.restart:
        await cur.execute("DELETE FROM search_entries WHERE conversation_id = %s AND message_index IS NOT NULL", (thread_id,))
    if update.entries:
        await cur.executemany(ENTRY, [entry(thread_id, *e) for e in update.entries])
    done = update.indexed
    await cur.execute(SAVE_STATE, (done.raw_count, done.next_index, done.last_id, thread_id))


async def indexed_state(cur: AsyncCursor[Any], thread_id: str) -> Indexed:
    """How far the thread is indexed, its row locked (claimed when it had none) until the
    transaction ends."""
    await cur.execute(STATE, (thread_id,))
    row = await cur.fetchone()
    if row is None:
        await cur.execute(CLAIM, (thread_id,))
        row = await cur.fetchone()
    return Indexed(*row) if row else Indexed()


async def claim_new_thread(cur: AsyncCursor[Any], thread_id: str) -> bool:
    """Take a thread the index has never seen (False if it has: another writer was first)."""
    await cur.execute(
        "INSERT INTO search_threads (conversation_id, raw_count, next_index, last_id) VALUES (%s, 0, 0, NULL) "
        "ON CONFLICT (conversation_id) DO NOTHING RETURNING 1",
        (thread_id,),
    )
    return await cur.fetchone() is not None


async def forget_thread(cur: AsyncCursor[Any], thread_id: str) -> None:
    """Remove a thread's message entries (its title stays while the conversation does)."""
    await cur.execute("DELETE FROM search_threads WHERE conversation_id = %s", (thread_id,))
    await cur.execute("DELETE FROM search_entries WHERE conversation_id = %s AND message_index IS NOT NULL", (thread_id,))


async def forget_conversation(cur: AsyncCursor[Any], conversation_id: str) -> None:
    """Remove every entry of a conversation (in the transaction that deletes it)."""
    await cur.execute("DELETE FROM search_threads WHERE conversation_id = %s", (conversation_id,))
    await cur.execute("DELETE FROM search_entries WHERE conversation_id = %s", (conversation_id,))


async def reset(cur: AsyncCursor[Any]) -> None:
    """Empty the index and index every title again (messages are the caller's). Writers
    of the index wait until the transaction ends; searches go on with the old index."""
    await cur.execute("LOCK TABLE search_threads, search_entries IN EXCLUSIVE MODE")
    await cur.execute("DELETE FROM search_threads")
    await cur.execute("DELETE FROM search_entries")
    await cur.execute("SELECT id, title FROM conversations")
    titles = await cur.fetchall()
    if titles:
        await cur.executemany(ENTRY, [entry(cid, None, "title", clean(title)) for cid, title in titles])


# titles or threads stored before the index existed (checkpoints: the saver's table,
# missing until a checkpointer first opened the database)
UNSEEN = (
    "SELECT EXISTS (SELECT 1 FROM conversations c WHERE NOT EXISTS (SELECT 1 FROM search_entries e "
    "WHERE e.conversation_id = c.id AND e.message_index IS NULL)) OR (to_regclass('checkpoints') IS NOT NULL "
    "AND EXISTS (SELECT 1 FROM checkpoints WHERE checkpoint_ns = '' "
    "AND thread_id NOT IN (SELECT conversation_id FROM search_threads)))"
)


class PostgresSearchIndex(SearchIndex):
    """Searches on the shared pool. The checkpointer decodes threads, so it does `rebuild`,
    and `catch_up` (before the first search) when titles or threads stored before the
    index existed are not indexed yet; a search of an up-to-date database never loads it."""

    def __init__(
        self,
        db: PostgresDatabase,
        rebuild: Callable[[], Awaitable[int]],
        catch_up: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self.db = db
        self._rebuild = rebuild
        self._catch_up = catch_up

    async def search(self, query: SearchQuery, limit: int, offset: int, owner: str | None = None) -> Sequence[SearchHit]:
        if self._catch_up is not None:
            catch_up, self._catch_up = self._catch_up, None
            async with self.db.cursor() as cur:
                await cur.execute(UNSEEN)
                row = await cur.fetchone()
            if row and row[0]:
                await catch_up()
        match, rank = conditions(tsquery(query))
        async with self.db.cursor() as cur:  # one statement: one snapshot
            values = {"ranked": RANKED, "limit": limit, "offset": offset}
            # one user's: the window is the most recent matches in their own conversations
            mine = (
                sql.SQL("")
                if owner is None
                else sql.SQL(" AND e.conversation_id IN (SELECT id FROM conversations WHERE owner = {})").format(
                    sql.Literal(owner)
                )
            )
            await cur.execute(
                sql.SQL(SEARCH_SQL).format(match=match, rank=rank, mine=mine, **{k: sql.Literal(v) for k, v in values.items()})
            )
            rows = await cur.fetchall()
        # snippets are CPU work on up to `limit` bodies: off the loop, so streams and probes go on
        return await asyncio.to_thread(_hits, rows, query)

    async def unsearched(self, owner: str | None = None) -> Unsearched:
        async with self.db.cursor() as cur:
            await cur.execute(UNSEARCHED if owner is None else OWNED_UNSEARCHED, () if owner is None else (owner,))
            row = await cur.fetchone()
        return Unsearched(*row) if row else Unsearched()

    async def rebuild(self) -> int:
        return await self._rebuild()

    async def aclose(self) -> None:
        """Close the shared pool (idempotent), which a search alone may have opened."""
        await self.db.close()


def _hits(rows: Sequence[tuple[Any, ...]], query: SearchQuery) -> list[SearchHit]:
    return [
        SearchHit(cid, title, index, role, snippet(body, query, indexed=MAX_TERMS_BYTES))
        for cid, title, index, role, body in rows
    ]
