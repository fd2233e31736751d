"""SearchIndex on SQLite FTS5.

`search_entries` holds one row per title and per indexed message, its text and its words'
stems (adapters.search_text); `search_fts` is an external-content FTS5 index of both
columns, kept in step by triggers. Titles follow the `conversations` table by triggers
(insert, rename, delete), and the run store stems them in the same transaction
(search_schema.stem_title). Messages are written by the checkpointer in the transaction of the
checkpoint that adds them (`index_thread`), and `search_threads` remembers how far each
thread is indexed."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from adapters.search_entries import Indexed, thread_update
from adapters.search_text import snippet, stem, stem_text
from adapters.sqlite.database import Worker, connect, migrate
from adapters.sqlite.search_schema import stem_pending
from domain.errors import InvalidInput, SearchBusy
from domain.model import Message
from ports.metrics import NO_METRICS, MetricsPort
from ports.search import SearchHit, SearchIndex, SearchQuery, Term, Unsearched

T = TypeVar("T")

# Ranking (bm25) costs a little per matching entry, so a word found in nearly every
# message would take seconds on a big file: only the most recent RANKED matching entries
# are ranked (FTS5 walks matches in rowid order without sorting them all), and snippets
# are made for the page of results only, in the same read transaction (by Python, which
# marks the words a stem matched too).
RANKED = 2000
BUDGET = 2.0  # seconds of work one search may take; then it is refused as too broad
PROGRESS_STEPS = 1_000  # SQLite VM steps between looks at the clock
MAX_WAITING = 4  # searches queued behind the one running (a single reader thread); more: 503
WINDOW_SQL = f"""
SELECT rowid, bm25(search_fts) FROM search_fts WHERE search_fts MATCH ? ORDER BY rowid DESC LIMIT {RANKED}
"""
# one user's: the window is the most recent matches in their own conversations
OWNED_WINDOW_SQL = f"""
SELECT search_fts.rowid, bm25(search_fts) FROM search_fts
JOIN search_entries e ON e.id = search_fts.rowid JOIN conversations c ON c.id = e.conversation_id
WHERE search_fts MATCH ? AND c.owner = ? ORDER BY search_fts.rowid DESC LIMIT {RANKED}
"""
HIT_SQL = """
SELECT e.conversation_id, c.title, e.message_index, e.role, e.body
FROM search_entries e JOIN conversations c ON c.id = e.conversation_id WHERE e.id = ?
"""
# the inactive branches (every branch but the active one: a thread never forked has no rows);
# one user's: each branch's conversation looked up (not the user's conversations listed: 9 ms
# at 10,000 conversations)
UNSEARCHED = "SELECT count(*), count(DISTINCT b.conversation_id) FROM branches b WHERE b.active = 0"
OWNED_UNSEARCHED = UNSEARCHED + (" AND EXISTS (SELECT 1 FROM conversations c WHERE c.id = b.conversation_id AND c.owner = ?)")


def _fts_term(term: Term) -> str:
    phrase = f'body : "{" ".join(term.words)}"' + ("*" if term.prefix else "")
    if not term.stem:
        return phrase
    stemmed = f'stems : "{stem(term.words[0])}"'
    return f"({phrase} OR {stemmed})" if term.prefix else stemmed


def fts_query(query: SearchQuery) -> str:
    """The FTS5 query: each term a quoted phrase of plain words (never user syntax) on the
    text, or a quoted stem on the stems, or either (a word being typed)."""
    return " AND ".join(_fts_term(t) for t in query.terms)


def index_thread(
    cur: sqlite3.Cursor,
    thread_id: str,
    raw: Sequence[T],
    convert: Callable[[T], Message | None],
    id_of: Callable[[T], str | None],
    appended: bool = False,
) -> None:
    """Index the messages of a thread's new checkpoint that the index has not seen, or
    (`appended`) those a pending input appends (see adapters.search_entries)."""
    row = cur.execute(
        "SELECT raw_count, next_index, last_id FROM search_threads WHERE conversation_id = ?", (thread_id,)
    ).fetchone()
    update = thread_update(Indexed(*row) if row else None, raw, convert, id_of, appended)
    if update is None:
        return
    if update.restart:
        cur.execute("DELETE FROM search_entries WHERE conversation_id = ? AND message_index IS NOT NULL", (thread_id,))
    cur.executemany(
        "INSERT INTO search_entries (conversation_id, message_index, role, body, stems) VALUES (?, ?, ?, ?, ?)",
        [(thread_id, index, role, body, stem_text(body)) for index, role, body in update.entries],
    )
    done = update.indexed
    cur.execute(
        "INSERT OR REPLACE INTO search_threads (conversation_id, raw_count, next_index, last_id) VALUES (?, ?, ?, ?)",
        (thread_id, done.raw_count, done.next_index, done.last_id),
    )


def forget_thread(cur: sqlite3.Cursor, thread_id: str) -> None:
    """Remove a thread's message entries (its title stays while the conversation does)."""
    cur.execute("DELETE FROM search_entries WHERE conversation_id = ? AND message_index IS NOT NULL", (thread_id,))
    cur.execute("DELETE FROM search_threads WHERE conversation_id = ?", (thread_id,))


def reset(cur: sqlite3.Cursor) -> None:
    """Empty the index, then index every title again (messages are the caller's)."""
    cur.execute("DELETE FROM search_entries")
    cur.execute("DELETE FROM search_threads")
    cur.execute("INSERT INTO search_fts (search_fts) VALUES ('rebuild')")
    cur.execute(
        "INSERT INTO search_entries (conversation_id, message_index, role, body) "
        "SELECT id, NULL, 'title', title FROM conversations"
    )
    stem_pending(cur)


def _search(
    conn: sqlite3.Connection, query: SearchQuery, limit: int, offset: int, budget: float = BUDGET, owner: str | None = None
) -> list[SearchHit]:
    match = fts_query(query)
    deadline = time.monotonic() + budget
    conn.set_progress_handler(lambda: time.monotonic() > deadline, PROGRESS_STEPS)  # true: interrupt
    conn.execute("BEGIN")  # one snapshot for the window and the page
    try:
        if owner is None:
            window = conn.execute(WINDOW_SQL, (match,)).fetchall()
        else:
            window = conn.execute(OWNED_WINDOW_SQL, (match, owner)).fetchall()
        page = sorted(window, key=lambda r: (r[1], r[0]))[offset : offset + limit]  # best bm25 first
        rows = [conn.execute(HIT_SQL, (rowid,)).fetchone() for rowid, _ in page]
    except sqlite3.OperationalError as e:
        if "interrupted" not in str(e):
            raise
        raise InvalidInput(f"The search took over {budget:g} s: narrow it with longer words or a phrase") from None
    finally:
        conn.set_progress_handler(None, 0)
        conn.execute("COMMIT")
    # an entry whose conversation row is gone (deleted in between) has no row here
    return [SearchHit(cid, title, index, role, snippet(body, query)) for cid, title, index, role, body in filter(None, rows)]


def _unsearched(conn: sqlite3.Connection, owner: str | None) -> Unsearched:
    row = conn.execute(UNSEARCHED, ()).fetchone() if owner is None else conn.execute(OWNED_UNSEARCHED, (owner,)).fetchone()
    return Unsearched(*row)


UNINDEXED_THREAD = (
    "SELECT 1 FROM checkpoints WHERE checkpoint_ns = '' AND thread_id NOT IN (SELECT conversation_id FROM search_threads) LIMIT 1"
)
# a title written by another program (whose trigger wrote no stems)
UNSTEMMED = "SELECT 1 FROM search_entries WHERE stems IS NULL LIMIT 1"


def _has_unindexed_threads(conn: sqlite3.Connection) -> bool:
    if conn.execute(UNSTEMMED).fetchone() is not None:
        return True
    try:
        return conn.execute(UNINDEXED_THREAD).fetchone() is not None
    except sqlite3.OperationalError:  # no checkpoints table yet: nothing to index
        return False


class SqliteSearchIndex(SearchIndex):
    """Reads on its own connection and thread. The checkpointer decodes threads, so it
    does `rebuild`, and `catch_up` (opening it) when threads stored before the index
    existed are not indexed yet; a query on an up-to-date file never loads it."""

    def __init__(
        self,
        path: str,
        rebuild: Callable[[], Awaitable[int]],
        catch_up: Callable[[], object] | None = None,
        metrics: MetricsPort = NO_METRICS,
    ) -> None:
        def open_connection() -> sqlite3.Connection:
            conn = connect(path)
            migrate(conn)
            return conn

        self._rebuild = rebuild
        self._searches = 0  # running or waiting
        self._worker = Worker("search", open_connection, metrics)
        if catch_up is not None and self._worker.call(_has_unindexed_threads):
            catch_up()

    async def search(self, query: SearchQuery, limit: int, offset: int, owner: str | None = None) -> Sequence[SearchHit]:
        if self._searches > MAX_WAITING:
            raise SearchBusy()
        self._searches += 1
        try:
            return await self._worker.run(_search, query, limit, offset, BUDGET, owner)
        finally:
            self._searches -= 1

    async def unsearched(self, owner: str | None = None) -> Unsearched:
        return await self._worker.run(_unsearched, owner)

    async def rebuild(self) -> int:
        return await self._rebuild()

    def close(self) -> None:
        self._worker.close()
