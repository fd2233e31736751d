"""The SQL the run store shares, and rows turned into domain values."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from domain.errors import ConversationNotFound, SessionInProgress
from domain.model import (
    Conversation,
    Run,
    RunError,
    RunOwner,
    RunStatus,
    RunTrigger,
    SystemMode,
    TitleSource,
    iso,
)

# The store's clock, in the format of domain.model.iso, so text order is time order and
# the stored text parses back to the same instant (a heartbeat is compared as text).
NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
AGO = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', printf('-%f seconds', ?))"

SUMMARY = """
SELECT c.id, c.title, c.created_at, c.updated_at, c.message_count,
       r.status, r.error_code, r.error_message, c.model, c.system, c.owner,
       (SELECT count(*) FROM queued_messages q WHERE q.conversation_id = c.id AND q.state = 'queued'),
       c.system_mode, c.pinned, c.archived, c.temporary, c.title_by, c.turns
FROM conversations c
LEFT JOIN runs r ON r.rowid = (
    SELECT rowid FROM runs WHERE conversation_id = c.id
    ORDER BY started_at DESC, rowid DESC LIMIT 1)
"""

# The last column is lease_expired; its two parameters are the lease in seconds.
RUNS = f"""
SELECT id, conversation_id, status, started_at, finished_at, error_code, error_message,
       owner_host, owner_pid, owner_started, owner_instance, owner_ns, heartbeat_at,
       base_count, "trigger",
       (? > 0 AND status = 'running' AND coalesce(heartbeat_at, '') < {AGO})
FROM runs
"""


def ts(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def conversation_from_row(row: tuple[Any, ...]) -> Conversation:
    cid, title, created, updated, count, status, code, message, model, system, owner, queued = row[:12]
    mode, pinned, archived, temporary, title_by, turns = row[12:]
    return Conversation(
        id=cid,
        title=title,
        created_at=datetime.fromisoformat(created),
        updated_at=datetime.fromisoformat(updated),
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


LATEST_RUN = "SELECT id, status FROM runs WHERE conversation_id = ? ORDER BY started_at DESC, rowid DESC LIMIT 1"


# USER_MAX_ACTIVE_RUNS: a user's running runs plus their queued messages (two args: the user twice)
OWNER_LOAD = (
    "SELECT (SELECT count(*) FROM runs r JOIN conversations c ON c.id = r.conversation_id "
    "WHERE c.owner = ? AND r.status = 'running') + (SELECT count(*) FROM queued_messages q "
    "JOIN conversations c ON c.id = q.conversation_id WHERE c.owner = ? AND q.state = 'queued')"
)


def insert_running(c: sqlite3.Connection, run: Run, now: datetime) -> None:
    """Insert `run` as running (heartbeat: the store's clock) and bump its conversation,
    in the caller's transaction; SessionInProgress if one of the conversation's runs is
    running."""
    if c.execute("SELECT 1 FROM runs WHERE conversation_id = ? AND status = 'running'", (run.conversation_id,)).fetchone():
        raise SessionInProgress()
    # the run's own message is committed with it: the list counts it while it runs
    bumped = c.execute(
        "UPDATE conversations SET updated_at = ?, message_count = max(message_count, ?) WHERE id = ?",
        (iso(now), run.base_count, run.conversation_id),
    )
    if bumped.rowcount == 0:
        raise ConversationNotFound()
    owner = run.owner
    try:
        c.execute(
            "INSERT INTO runs (id, conversation_id, status, started_at, owner_host, owner_pid, "
            'owner_started, owner_instance, owner_ns, base_count, "trigger", heartbeat_at) '
            f"VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, {NOW})",
            (
                run.id,
                run.conversation_id,
                iso(run.started_at),
                owner.host if owner else None,
                owner.pid if owner else None,
                owner.started if owner else None,
                owner.instance if owner else None,
                owner.namespace if owner else None,
                run.base_count,
                run.trigger.value,
            ),
        )
    except sqlite3.IntegrityError as e:
        # The partial unique index has the last word if the check above ever races.
        if "runs.conversation_id" in str(e):
            raise SessionInProgress() from e
        raise


def run_from_row(row: tuple[Any, ...]) -> Run:
    rid, cid, status, started, finished, code, message = row[:7]
    host, pid, pstart, instance, ns, beat, base_count, trigger, expired = row[7:]
    owner = RunOwner(host, pid, pstart, instance or "", ns or 0) if host is not None else None
    return Run(
        id=rid,
        conversation_id=cid,
        status=RunStatus(status),
        started_at=datetime.fromisoformat(started),
        finished_at=ts(finished),
        error_code=code,
        error_message=message,
        owner=owner,
        heartbeat_at=ts(beat),
        base_count=base_count,
        trigger=RunTrigger(trigger),
        lease_expired=bool(expired),
    )


def marks(values: Sequence[object]) -> str:
    return ",".join("?" * len(values))


def fetchall(c: sqlite3.Connection, sql: str, args: Sequence[object] = ()) -> list[tuple[Any, ...]]:
    return c.execute(sql, args).fetchall()
