"""The SQL the PostgreSQL run store shares, and rows turned into domain values."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg import AsyncCursor

from adapters.postgres.presence import OWNER_ALIVE
from domain.errors import ConversationNotFound, SessionInProgress
from domain.model import Conversation, Run, RunError, RunOwner, RunStatus, RunTrigger, SystemMode, TitleSource

SUMMARY = """
SELECT c.id, c.title, c.created_at, c.updated_at, c.message_count, r.status, r.error_code, r.error_message,
       c.model, c.system, c.owner,
       (SELECT count(*) FROM queued_messages q WHERE q.conversation_id = c.id AND q.state = 'queued'),
       c.system_mode, c.pinned, c.archived, c.temporary, c.title_by, c.turns
FROM conversations c
LEFT JOIN LATERAL (SELECT status, error_code, error_message FROM runs WHERE conversation_id = c.id
                   ORDER BY started_at DESC, n DESC LIMIT 1) r ON TRUE
"""

# The last column is lease_expired (parameter `lease`, in seconds), by the database's clock:
# the owner of a registered instance is gone when nobody holds its lock (whatever its
# heartbeat says: a paused owner keeps its session, so its lease never expires); an owner
# that never registered has the heartbeat lease.
RUNS = f"""
SELECT r.id, r.conversation_id, r.status, r.started_at, r.finished_at, r.error_code, r.error_message,
       r.owner_host, r.owner_pid, r.owner_started, r.owner_instance, r.owner_ns, r.heartbeat_at,
       r.base_count, r."trigger",
       (%(lease)s > 0 AND r.status = 'running' AND CASE
            WHEN p.instance IS NULL
            THEN coalesce(r.heartbeat_at, '-infinity') < now() - make_interval(secs => %(lease)s)
            ELSE NOT {OWNER_ALIVE} END)
FROM runs r LEFT JOIN processes p ON p.instance = r.owner_instance
"""

LATEST = " ORDER BY r.started_at DESC, r.n DESC"


def conversation_from_row(row: tuple[Any, ...]) -> Conversation:
    cid, title, created, updated, count, status, code, message, model, system, owner, queued = row[:12]
    mode, pinned, archived, temporary, title_by, turns = row[12:]
    return Conversation(
        id=cid,
        title=title,
        created_at=created,
        updated_at=updated,
        message_count=count,
        status=RunStatus(status) if status else None,
        error=RunError(code, message or "") if code else None,
        model=model,
        system=system,
        queued=queued,
        owner=owner,
        system_mode=SystemMode(mode),
        pinned=bool(pinned),
        archived=bool(archived),
        temporary=bool(temporary),
        title_by=TitleSource(title_by),
        turns=turns,
    )


def run_from_row(row: tuple[Any, ...]) -> Run:
    rid, cid, status, started, finished, code, message = row[:7]
    host, pid, pstart, instance, ns, beat, base_count, trigger, expired = row[7:]
    owner = RunOwner(host, pid, pstart, instance or "", ns or 0) if host is not None else None
    return Run(
        id=rid,
        conversation_id=cid,
        status=RunStatus(status),
        started_at=started,
        finished_at=finished,
        error_code=code,
        error_message=message,
        owner=owner,
        heartbeat_at=beat,
        base_count=base_count,
        trigger=RunTrigger(trigger),
        lease_expired=bool(expired),
    )


def stamp(now: datetime) -> datetime:
    """A display time as SQLite keeps it (milliseconds), so both stores read back alike."""
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


async def insert_running(cur: AsyncCursor[Any], run: Run, now: datetime) -> None:
    """Insert `run` as running (heartbeat: the database's clock) and bump its conversation,
    in the caller's transaction; SessionInProgress if one of the conversation's runs is
    running. The conversation's row lock, taken first, queues concurrent starts."""
    # the run's own message is committed with it: the list counts it while it runs
    await cur.execute(
        "UPDATE conversations SET updated_at = %s, message_count = GREATEST(message_count, %s) WHERE id = %s RETURNING id",
        (stamp(now), run.base_count, run.conversation_id),
    )
    if await cur.fetchone() is None:
        raise ConversationNotFound()
    # the row lock above queues concurrent starts: this sees the winner's run
    await cur.execute("SELECT 1 FROM runs WHERE conversation_id = %s AND status = 'running'", (run.conversation_id,))
    if await cur.fetchone():
        raise SessionInProgress()
    owner = run.owner
    await cur.execute(
        "INSERT INTO runs (id, conversation_id, status, started_at, owner_host, owner_pid, "
        'owner_started, owner_instance, owner_ns, base_count, "trigger", heartbeat_at) '
        "VALUES (%s, %s, 'running', %s, %s, %s, %s, %s, %s, %s, %s, now())",
        (
            run.id,
            run.conversation_id,
            stamp(run.started_at),
            owner.host if owner else None,
            owner.pid if owner else None,
            owner.started if owner else None,
            owner.instance if owner else None,
            owner.namespace if owner else None,
            run.base_count,
            run.trigger.value,
        ),
    )
