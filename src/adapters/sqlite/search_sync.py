"""The checkpointer's side of the search index: index each checkpoint's new messages in
its own transaction, catch up threads written before the index existed, and rebuild."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import Checkpoint

from adapters.langchain.messages import from_fields, to_domain
from adapters.langgraph.keys import INPUT_TASK
from adapters.langgraph.rows import input_fields, input_messages, plain_messages
from adapters.search_entries import with_file_texts
from adapters.sqlite import file_rows
from adapters.sqlite.message_rows import read_plain
from adapters.sqlite.search import UNSTEMMED, forget_thread, index_thread, reset
from adapters.sqlite.search_schema import stem_pending
from domain.model import Message

log = logging.getLogger(__name__)
T = TypeVar("T")

LATEST = (
    "SELECT type, checkpoint, checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
    "ORDER BY checkpoint_id DESC LIMIT 1"
)
# the messages waiting on a checkpoint as pending input (adapters.langgraph.engine)
PENDING_INPUT = (
    "SELECT type, value FROM writes WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ? "
    "AND task_id = ? AND channel = 'messages' ORDER BY idx"
)


def _with_texts(cur: sqlite3.Cursor, thread_id: str, convert: Callable[[T], Message | None]) -> Callable[[T], Message | None]:
    """A user message indexed with its files' text, read in the indexing transaction (which
    stored the files, or follows the one that did)."""
    return with_file_texts(convert, lambda digests: file_rows.texts(cur, thread_id, digests))


def index_checkpoint(cur: sqlite3.Cursor, thread_id: str, checkpoint: Checkpoint) -> None:
    """In the checkpoint's transaction: index the messages it adds to the thread."""
    messages: list[BaseMessage] = checkpoint["channel_values"].get("messages") or []
    index_thread(cur, thread_id, messages, _with_texts(cur, thread_id, to_domain), lambda m: m.id)


def index_input(cur: sqlite3.Cursor, thread_id: str, writes: Sequence[tuple[str, Any]]) -> None:
    """In the transaction of a pending input (a new message saved as writes on the thread's
    latest checkpoint, indexed with it): index the messages it appends."""
    index_thread(cur, thread_id, input_messages(writes), _with_texts(cur, thread_id, to_domain), lambda m: m.id, appended=True)


def _index_stored(cur: sqlite3.Cursor, thread_id: str) -> None:
    row = cur.execute(LATEST, (thread_id,)).fetchone()
    checkpoint = read_plain(cur, thread_id, row[0], row[1]) if row else None
    if checkpoint is None:
        forget_thread(cur, thread_id)
        return
    fields = plain_messages(checkpoint) + input_fields(cur.execute(PENDING_INPUT, (thread_id, row[2], INPUT_TASK)).fetchall())
    index_thread(cur, thread_id, fields, _with_texts(cur, thread_id, from_fields), lambda f: f.get("id"))


def _threads(cur: sqlite3.Cursor, missing_only: bool) -> list[str]:
    sql = "SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = ''"
    if missing_only:
        sql += " AND thread_id NOT IN (SELECT conversation_id FROM search_threads)"
    return [r[0] for r in cur.execute(sql).fetchall()]


def index_missing(conn: sqlite3.Connection) -> int:
    """Stem the titles another program wrote, then index the threads the index has never
    seen (stored before it existed); each in its own transaction. Returns how many threads."""
    if conn.execute(UNSTEMMED).fetchone() is not None:  # a read first: an up-to-date file is not written
        conn.execute("BEGIN IMMEDIATE")
        try:
            stemmed = stem_pending(conn.cursor())
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        log.info("search index: stemmed %d title(s) written by another program", stemmed)
    threads = _threads(conn.cursor(), missing_only=True)
    for thread_id in threads:
        conn.execute("BEGIN IMMEDIATE")
        try:
            cur = conn.cursor()
            if cur.execute("SELECT 1 FROM search_threads WHERE conversation_id = ?", (thread_id,)).fetchone() is None:
                _index_stored(cur, thread_id)
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
    if threads:
        log.info("search index: indexed %d existing thread(s)", len(threads))
    return len(threads)


def rebuild(conn: sqlite3.Connection) -> int:
    """Empty the index and index every title and thread again, in one transaction.
    Returns the number of entries."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        cur = conn.cursor()
        reset(cur)
        for thread_id in _threads(cur, missing_only=False):
            _index_stored(cur, thread_id)
        (count,) = cur.execute("SELECT count(*) FROM search_entries").fetchone()
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return int(count)
