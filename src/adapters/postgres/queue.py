"""MessageQueue on PostgreSQL, on the run store's pool. An enqueue and the outcome that
drains the queue both lock the conversation's row, so one always sees the other: a
message is never queued behind a run that has just finished without starting it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from psycopg import AsyncCursor

from adapters.postgres.database import PostgresDatabase
from adapters.postgres.rows import insert_running, stamp
from adapters.postgres.schedules import claim_firing
from domain.errors import ConversationNotFound, QueueFull
from domain.model import Run, RunStatus
from domain.queue import QueuedMessage, QueueState, accepts_queue
from domain.schedules import FiringClaim
from ports.queue import MessageQueue
from ports.runs import RunFinish

COLUMNS = "id, conversation_id, position, body, created_at, state, run_id, steer"
LATEST_RUN = "SELECT id, status FROM runs WHERE conversation_id = %s ORDER BY started_at DESC, n DESC LIMIT 1"


def message_from_row(row: tuple[Any, ...]) -> QueuedMessage:
    qid, cid, position, body, created, state, run_id, steer = row
    return QueuedMessage(qid, cid, position, body, created, QueueState(state), run_id, bool(steer))


async def _latest(cur: AsyncCursor[Any], conversation_id: str) -> Run | None:
    await cur.execute(LATEST_RUN, (conversation_id,))
    row = await cur.fetchone()
    # only what the queue's rules read: the id and the status
    return Run(row[0], conversation_id, RunStatus(row[1]), datetime.min) if row else None


async def _lock_conversation(cur: AsyncCursor[Any], conversation_id: str) -> None:
    await cur.execute("SELECT 1 FROM conversations WHERE id = %s FOR UPDATE", (conversation_id,))
    if await cur.fetchone() is None:
        raise ConversationNotFound()


async def claim_first(cur: AsyncCursor[Any], run: Run, now: datetime) -> QueuedMessage | None:
    """Start the conversation's first waiting message as `run`, in the caller's transaction."""
    await cur.execute(
        f"SELECT {COLUMNS} FROM queued_messages WHERE conversation_id = %s AND state = 'queued' "
        "ORDER BY position LIMIT 1 FOR UPDATE",
        (run.conversation_id,),
    )
    first = await cur.fetchone()
    if first is None:
        return None
    await cur.execute("SELECT 1 FROM runs WHERE id = %s", (first[0],))
    if await cur.fetchone() is None:
        run = replace(run, id=first[0])  # ports.queue.start_queued: the message's id, once
    await insert_running(cur, run, now)
    await cur.execute("UPDATE queued_messages SET state = 'started', run_id = %s WHERE id = %s", (run.id, first[0]))
    return message_from_row((*first[:5], QueueState.STARTED.value, run.id, first[7]))


async def after_finish(cur: AsyncCursor[Any], run_id: str, conversation_id: str, finish: RunFinish) -> QueuedMessage | None:
    """The queue's half of finish_run, in its transaction: the run's own claim is
    settled, then (after `completed`) the next message starts."""
    if finish.input_recorded:
        await cur.execute("DELETE FROM queued_messages WHERE run_id = %s", (run_id,))
    else:  # the message never reached the thread: back to the head of the queue
        await cur.execute(
            "UPDATE queued_messages SET state = 'queued', run_id = NULL, position = (SELECT min(position) - 1 "
            "FROM queued_messages WHERE conversation_id = %s) WHERE run_id = %s",
            (conversation_id, run_id),
        )
    if finish.then is not None and finish.status is RunStatus.COMPLETED:
        return await claim_first(cur, finish.then, finish.now)
    return None


class PostgresQueue(MessageQueue):
    db: PostgresDatabase

    async def ready(self) -> None:
        raise NotImplementedError

    async def _rows(self, sql: str, args: Sequence[object] | Mapping[str, object] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    async def enqueue(self, message: QueuedMessage, limit: int, firing: FiringClaim | None = None) -> QueuedMessage | None:
        cid = message.conversation_id
        await self.ready()
        async with self.db.cursor(transaction=True) as cur:
            await _lock_conversation(cur, cid)  # a finish_run of its run waits, or is seen
            if not accepts_queue(await _latest(cur, cid)):
                return None
            await cur.execute(
                "SELECT count(*) FILTER (WHERE state = 'queued'), coalesce(max(position), 0), coalesce(min(position), 1) "
                "FROM queued_messages WHERE conversation_id = %s",
                (cid,),
            )
            found = await cur.fetchone()
            assert found is not None
            waiting, last, first = found
            if waiting >= limit:
                raise QueueFull()
            await cur.execute(
                f"INSERT INTO queued_messages ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, 'queued', NULL, %s) RETURNING {COLUMNS}",
                (
                    message.id,
                    cid,
                    first - 1 if message.steer else last + 1,
                    message.text,
                    stamp(message.created_at),
                    message.steer,
                ),
            )
            row = await cur.fetchone()
            if firing is not None:  # the same transaction: both or neither
                await claim_firing(cur, firing, message.id, cid, queued=True)
        assert row is not None
        return message_from_row(row)

    async def queued(self, conversation_id: str) -> Sequence[QueuedMessage]:
        rows = await self._rows(
            f"SELECT {COLUMNS} FROM queued_messages WHERE conversation_id = %s AND state = 'queued' ORDER BY position",
            (conversation_id,),
        )
        return [message_from_row(r) for r in rows]

    async def claimed(self, run_id: str) -> QueuedMessage | None:
        rows = await self._rows(f"SELECT {COLUMNS} FROM queued_messages WHERE run_id = %s", (run_id,))
        return message_from_row(rows[0]) if rows else None

    async def edit_queued(self, conversation_id: str, message_id: str, text: str) -> QueuedMessage | None:
        rows = await self._rows(
            "UPDATE queued_messages SET body = %s WHERE id = %s AND conversation_id = %s AND state = 'queued' "
            f"RETURNING {COLUMNS}",
            (text, message_id, conversation_id),
        )
        return message_from_row(rows[0]) if rows else None

    async def drop_queued(self, conversation_id: str, message_id: str) -> bool:
        rows = await self._rows(
            "DELETE FROM queued_messages WHERE id = %s AND conversation_id = %s AND state = 'queued' RETURNING id",
            (message_id, conversation_id),
        )
        return bool(rows)

    async def start_queued(self, run: Run, now: datetime, after: str | None) -> QueuedMessage | None:
        await self.ready()
        async with self.db.cursor(transaction=True) as cur:
            await _lock_conversation(cur, run.conversation_id)
            latest = await _latest(cur, run.conversation_id)
            if (latest.id if latest else None) != after or (latest and latest.status is RunStatus.RUNNING):
                return None
            return await claim_first(cur, run, now)

    async def steered(self, conversation_ids: Sequence[str]) -> set[str]:
        ids = list(dict.fromkeys(conversation_ids))
        if not ids:
            return set()
        rows = await self._rows(
            "SELECT DISTINCT conversation_id FROM queued_messages WHERE steer AND state = 'queued' AND conversation_id = ANY(%s)",
            (ids,),
        )
        return {r[0] for r in rows}

    async def queued_conversations(self) -> Sequence[str]:
        rows = await self._rows(
            "SELECT conversation_id FROM queued_messages GROUP BY conversation_id "
            "HAVING count(*) FILTER (WHERE state = 'started') = 0 ORDER BY conversation_id"
        )
        return [r[0] for r in rows]
