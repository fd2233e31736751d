"""MessageQueue on the SQLite file, on the run store's writer and reader: every write is a
BEGIN IMMEDIATE transaction, so an enqueue and the outcome that drains the queue are
ordered by the file's one write lock."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from adapters.sqlite.database import Worker, transaction
from adapters.sqlite.rows import LATEST_RUN, fetchall, insert_running, marks
from adapters.sqlite.schedules import claim_firing
from domain.errors import ConversationNotFound, QueueFull
from domain.model import Run, RunStatus, iso
from domain.queue import QueuedMessage, QueueState, accepts_queue
from domain.schedules import FiringClaim
from ports.queue import MessageQueue
from ports.runs import RunFinish

COLUMNS = "id, conversation_id, position, body, created_at, state, run_id, steer"


def message_from_row(row: tuple[Any, ...]) -> QueuedMessage:
    qid, cid, position, body, created, state, run_id, steer = row
    return QueuedMessage(qid, cid, position, body, datetime.fromisoformat(created), QueueState(state), run_id, bool(steer))


def _latest(c: sqlite3.Connection, conversation_id: str) -> Run | None:
    row = c.execute(LATEST_RUN, (conversation_id,)).fetchone()
    if row is None:
        return None
    # only what the queue's rules read: the id and the status
    return Run(row[0], conversation_id, RunStatus(row[1]), datetime.min)


def claim_first(c: sqlite3.Connection, run: Run, now: datetime) -> QueuedMessage | None:
    """Start the conversation's first waiting message as `run`, in the caller's transaction."""
    first = c.execute(
        f"SELECT {COLUMNS} FROM queued_messages WHERE conversation_id = ? AND state = 'queued' ORDER BY position LIMIT 1",
        (run.conversation_id,),
    ).fetchone()
    if first is None:
        return None
    if c.execute("SELECT 1 FROM runs WHERE id = ?", (first[0],)).fetchone() is None:
        run = replace(run, id=first[0])  # ports.queue.start_queued: the message's id, once
    insert_running(c, run, now)
    c.execute("UPDATE queued_messages SET state = 'started', run_id = ? WHERE id = ?", (run.id, first[0]))
    return message_from_row((*first[:5], QueueState.STARTED.value, run.id, first[7]))


def after_finish(c: sqlite3.Connection, run_id: str, conversation_id: str, finish: RunFinish) -> QueuedMessage | None:
    """The queue's half of finish_run, in its transaction: the run's own claim is
    settled, then (after `completed`) the next message starts."""
    if finish.input_recorded:
        c.execute("DELETE FROM queued_messages WHERE run_id = ?", (run_id,))
    else:  # the message never reached the thread: back to the head of the queue
        c.execute(
            "UPDATE queued_messages SET state = 'queued', run_id = NULL, position = (SELECT min(position) - 1 "
            "FROM queued_messages WHERE conversation_id = ?) WHERE run_id = ?",
            (conversation_id, run_id),
        )
    if finish.then is not None and finish.status is RunStatus.COMPLETED:
        return claim_first(c, finish.then, finish.now)
    return None


class SqliteQueue(MessageQueue):
    _writer: Worker
    _reader: Worker

    async def enqueue(self, message: QueuedMessage, limit: int, firing: FiringClaim | None = None) -> QueuedMessage | None:
        cid = message.conversation_id

        def write(c: sqlite3.Connection) -> QueuedMessage | None:
            with transaction(c):  # synced: the message is acknowledged once this returns
                if c.execute("SELECT 1 FROM conversations WHERE id = ?", (cid,)).fetchone() is None:
                    raise ConversationNotFound()
                if not accepts_queue(_latest(c, cid)):
                    return None
                waiting, last, first = c.execute(
                    "SELECT count(*) FILTER (WHERE state = 'queued'), coalesce(max(position), 0), coalesce(min(position), 1) "
                    "FROM queued_messages WHERE conversation_id = ?",
                    (cid,),
                ).fetchone()
                if waiting >= limit:
                    raise QueueFull()
                c.execute(
                    f"INSERT INTO queued_messages ({COLUMNS}) VALUES (?, ?, ?, ?, ?, 'queued', NULL, ?)",
                    (
                        message.id,
                        cid,
                        first - 1 if message.steer else last + 1,
                        message.text,
                        iso(message.created_at),
                        int(message.steer),
                    ),
                )
                if firing is not None:  # the same transaction: both or neither
                    claim_firing(c, firing, message.id, cid, queued=True)
                row = c.execute(f"SELECT {COLUMNS} FROM queued_messages WHERE id = ?", (message.id,)).fetchone()
            return message_from_row(row)

        return await self._writer.run(write)

    async def queued(self, conversation_id: str) -> Sequence[QueuedMessage]:
        rows = await self._reader.run(
            fetchall,
            f"SELECT {COLUMNS} FROM queued_messages WHERE conversation_id = ? AND state = 'queued' ORDER BY position",
            (conversation_id,),
        )
        return [message_from_row(r) for r in rows]

    async def claimed(self, run_id: str) -> QueuedMessage | None:
        rows = await self._reader.run(fetchall, f"SELECT {COLUMNS} FROM queued_messages WHERE run_id = ?", (run_id,))
        return message_from_row(rows[0]) if rows else None

    async def edit_queued(self, conversation_id: str, message_id: str, text: str) -> QueuedMessage | None:
        def write(c: sqlite3.Connection) -> QueuedMessage | None:
            with transaction(c):
                row = c.execute(
                    f"UPDATE queued_messages SET body = ? WHERE id = ? AND conversation_id = ? AND state = 'queued' "
                    f"RETURNING {COLUMNS}",
                    (text, message_id, conversation_id),
                ).fetchone()
            return message_from_row(row) if row else None

        return await self._writer.run(write)

    async def drop_queued(self, conversation_id: str, message_id: str) -> bool:
        def write(c: sqlite3.Connection) -> bool:
            with transaction(c):
                cur = c.execute(
                    "DELETE FROM queued_messages WHERE id = ? AND conversation_id = ? AND state = 'queued'",
                    (message_id, conversation_id),
                )
            return cur.rowcount > 0

        return await self._writer.run(write)

    async def start_queued(self, run: Run, now: datetime, after: str | None) -> QueuedMessage | None:
        def write(c: sqlite3.Connection) -> QueuedMessage | None:
            with transaction(c):
                latest = _latest(c, run.conversation_id)
                if (latest.id if latest else None) != after or (latest and latest.status is RunStatus.RUNNING):
                    return None
                return claim_first(c, run, now)

        return await self._writer.run(write)

    async def steered(self, conversation_ids: Sequence[str]) -> set[str]:
        ids = list(dict.fromkeys(conversation_ids))
        if not ids:
            return set()
        rows = await self._reader.run(
            fetchall,
            f"SELECT DISTINCT conversation_id FROM queued_messages WHERE steer = 1 AND state = 'queued' "
            f"AND conversation_id IN ({marks(ids)})",
            ids,
        )
        return {r[0] for r in rows}

    async def queued_conversations(self) -> Sequence[str]:
        rows = await self._reader.run(
            fetchall,
            "SELECT conversation_id FROM queued_messages GROUP BY conversation_id "
            "HAVING count(*) FILTER (WHERE state = 'started') = 0 ORDER BY conversation_id",
        )
        return [r[0] for r in rows]
