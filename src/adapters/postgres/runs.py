"""The run store on PostgreSQL: conversations, runs, their events, cancel requests and the
tool journal (RunRepository, RunEventLog, RunSignals, ToolJournal in one class, so an
outcome and its terminal event are one transaction), shared by any number of processes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from adapters.postgres.approvals import PostgresApprovals
from adapters.postgres.database import USER_LOAD_LOCK, PostgresDatabase
from adapters.postgres.events import NOTIFY, PostgresRunEvents
from adapters.postgres.organise import PostgresOrganising, shown_sql
from adapters.postgres.presence import Presence
from adapters.postgres.queue import PostgresQueue, after_finish
from adapters.postgres.rows import (
    LATEST,
    RUNS,
    SUMMARY,
    conversation_from_row,
    insert_running,
    run_from_row,
    stamp,
)
from adapters.postgres.schedules import PostgresSchedules, claim_firing, firing_unsaved
from adapters.postgres.search import forget_conversation, index_title
from adapters.postgres.webhooks import PostgresWebhooks, record_delivery
from adapters.storage.event_rows import pack
from adapters.storage.wakeups import Wakeups
from domain.errors import FiringTaken, SessionInProgress, UserLimitReached
from domain.lifecycle import GIVE_UP
from domain.model import Conversation, Run, RunError, RunOwner, TitleSource
from domain.models import ChatSettings
from domain.organise import Shown
from domain.principals import BOOTSTRAP_ID
from domain.queue import QueuedMessage
from domain.schedules import FiringClaim
from ports.runs import LoadCap, RunFinish, RunRepository

# USER_MAX_ACTIVE_RUNS: a user's running runs plus their queued messages (two args: the user twice)
OWNER_LOAD = (
    "SELECT (SELECT count(*) FROM runs r JOIN conversations c ON c.id = r.conversation_id "
    "WHERE c.owner = %s AND r.status = 'running') + (SELECT count(*) FROM queued_messages q "
    "JOIN conversations c ON c.id = q.conversation_id WHERE c.owner = %s AND q.state = 'queued')"
)


class PostgresRunStore(
    PostgresRunEvents, PostgresApprovals, PostgresQueue, PostgresSchedules, PostgresWebhooks, PostgresOrganising, RunRepository
):
    """Every method takes a pooled connection for one statement or one transaction.
    `owner`, when given, is this process: its presence (liveness lock, notifications) is
    held from first use until `aclose`. `poll_interval` bounds how long a follower waits
    when a notification is lost."""

    def __init__(self, db: PostgresDatabase, owner: RunOwner | None = None, poll_interval: float = 0.25) -> None:
        self.db = db
        self.poll_interval = poll_interval
        self._wakeups = Wakeups()
        self._presence = Presence(db.url, owner, self._wakeups)

    @property
    def schema_version(self) -> int:
        return self.db.schema_version

    async def ready(self) -> None:
        """Open the pool (migrating the schema) and start this process's presence."""
        await self.db.pool()
        self._presence.start()

    async def ping(self) -> bool:
        """True if the database answers (StorageFailure if it does not)."""
        return bool(await self._rows("SELECT 1"))

    async def aclose(self) -> None:
        await self._presence.close()
        await self.db.close()

    async def _rows(self, sql: str, args: Sequence[object] | Mapping[str, object] = ()) -> list[tuple[Any, ...]]:
        """One statement (in autocommit: its own transaction); the rows it returns."""
        await self.ready()
        async with self.db.cursor() as cur:
            await cur.execute(sql, args)
            return await cur.fetchall() if cur.description else []

    # --- conversations -------------------------------------------------------------------

    async def create_conversation(
        self,
        conversation_id: str,
        title: str,
        now: datetime,
        settings: ChatSettings = ChatSettings(),  # noqa: B008
        message_count: int = 0,
        owner: str = BOOTSTRAP_ID,
        title_by: TitleSource = TitleSource.MESSAGE,
        temporary: bool = False,
    ) -> Conversation:
        at = stamp(now)
        await self.ready()
        async with self.db.cursor(transaction=True) as cur:
            await cur.execute(
                "INSERT INTO conversations (id, title, created_at, updated_at, message_count, model, system, owner, "
                "system_mode, title_by, temporary) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    conversation_id,
                    title,
                    at,
                    at,
                    message_count,
                    settings.model,
                    settings.system,
                    owner,
                    settings.system_mode.value,
                    title_by.value,
                    int(temporary),
                ),
            )
            await index_title(cur, conversation_id, title)
        return Conversation(
            conversation_id,
            title,
            at,
            at,
            message_count,
            model=settings.model,
            system=settings.system,
            owner=owner,
            system_mode=settings.system_mode,
            title_by=title_by,
            temporary=temporary,
        )

    async def set_chat_settings(self, conversation_id: str, settings: ChatSettings) -> bool:
        rows = await self._rows(
            "UPDATE conversations SET model = %s, system = %s, system_mode = %s WHERE id = %s RETURNING id",
            (settings.model, settings.system, settings.system_mode.value, conversation_id),
        )
        return bool(rows)

    async def get_conversation(self, conversation_id: str) -> Conversation | None:
        rows = await self._rows(SUMMARY + " WHERE c.id = %s", (conversation_id,))
        return conversation_from_row(rows[0]) if rows else None

    async def list_conversations(
        self,
        limit: int | None = None,
        before: tuple[datetime, str] | None = None,
        query: str = "",
        owner: str | None = None,
        shown: Shown = Shown(),  # noqa: B008 - a frozen value
    ) -> Sequence[Conversation]:
        (where, args), sql = shown_sql(shown), SUMMARY
        if owner is not None:
            where.append("c.owner = %s")
            args.append(owner)
        if before is not None:
            where.append("(c.updated_at, c.id) < (%s, %s)")
            args += [stamp(before[0]), before[1]]
        if query:  # a substring, not a pattern; ICU's case mapping whatever the database's locale
            where.append('strpos(lower(c.title COLLATE "und-x-icu"), lower(%s COLLATE "und-x-icu")) > 0')
            args.append(query)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY c.updated_at DESC, c.id DESC"
        if limit is not None:
            sql += " LIMIT %s"
            args.append(limit)
        return [conversation_from_row(r) for r in await self._rows(sql, args)]

    async def owner_load(self, owner: str) -> int:
        return int((await self._rows(OWNER_LOAD, [owner, owner]))[0][0])

    async def give_conversations(self, from_owner: str, to_owner: str) -> int:
        rows = await self._rows(
            "WITH moved AS (UPDATE schedules SET owner = %(to)s WHERE owner = %(from)s) "
            "UPDATE conversations SET owner = %(to)s WHERE owner = %(from)s RETURNING 1",
            {"to": to_owner, "from": from_owner},
        )
        return len(rows)

    async def find_conversations(self, id_prefix: str, limit: int, owner: str | None = None) -> Sequence[Conversation]:
        # a range on the primary key in byte order (the column's collation may order '-' apart)
        mine = "" if owner is None else " AND c.owner = %s"
        sql = SUMMARY + (
            f' WHERE c.id COLLATE "C" >= %s AND c.id COLLATE "C" < %s AND c.temporary = 0{mine}'
            " ORDER BY c.updated_at DESC, c.id DESC LIMIT %s"
        )
        args: list[object] = [id_prefix, id_prefix + "~", *([] if owner is None else [owner]), limit]
        return [conversation_from_row(r) for r in await self._rows(sql, args)]

    async def restore_conversation(self, conversation_id: str, message_count: int, updated_at: datetime) -> bool:
        await self.ready()
        async with self.db.cursor(transaction=True) as cur:
            await cur.execute(
                "UPDATE conversations SET message_count = %s, updated_at = %s WHERE id = %s RETURNING id",
                (message_count, stamp(updated_at), conversation_id),
            )
            return await cur.fetchone() is not None

    async def rename_conversation(self, conversation_id: str, title: str, now: datetime) -> bool:
        await self.ready()
        async with self.db.cursor(transaction=True) as cur:
            await cur.execute(
                "UPDATE conversations SET title = %s, updated_at = %s, title_by = 'user' WHERE id = %s RETURNING id",
                (title, stamp(now), conversation_id),
            )
            if await cur.fetchone() is None:
                return False
            await index_title(cur, conversation_id, title)
        return True

    async def delete_conversation(self, conversation_id: str) -> bool:
        await self.ready()
        async with self.db.cursor(transaction=True) as cur:
            # the row lock orders this against a start_run on the same conversation
            await cur.execute("SELECT 1 FROM conversations WHERE id = %s FOR UPDATE", (conversation_id,))
            if await cur.fetchone() is None:
                return False
            await cur.execute("SELECT 1 FROM runs WHERE conversation_id = %s AND status = 'running'", (conversation_id,))
            if await cur.fetchone():
                raise SessionInProgress()
            # runs, their events, the journal and the queue go by ON DELETE CASCADE
            await cur.execute("DELETE FROM conversations WHERE id = %s", (conversation_id,))
            await forget_conversation(cur, conversation_id)
        return True

    # --- runs ----------------------------------------------------------------------------

    async def start_run(
        self,
        run: Run,
        now: datetime,
        flushed_by_input: bool = False,
        cap: LoadCap | None = None,
        firing: FiringClaim | None = None,
    ) -> None:
        await self.ready()
        try:
            async with self.db.cursor(transaction=True) as cur:
                if flushed_by_input:  # the input's commit flushes the WAL up to and past this one
                    await cur.execute("SET LOCAL synchronous_commit TO OFF")
                if cap is not None:
                    # held to the commit: the next capped start of this user reads this run
                    # (READ COMMITTED: each statement sees what committed before it began)
                    await cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (USER_LOAD_LOCK, cap.owner))
                    await cur.execute(OWNER_LOAD, (cap.owner, cap.owner))
                    if (load := await cur.fetchone()) is not None and load[0] >= cap.limit:
                        raise UserLimitReached()
                if firing is not None:  # the same transaction: both or neither
                    await claim_firing(cur, firing, run.id, run.conversation_id, queued=False)
                await insert_running(cur, run, now)
        except (SessionInProgress, UserLimitReached, FiringTaken):
            raise
        except Exception as e:
            # the partial unique index (one running run per conversation) has the last word
            if isinstance(e.__cause__, psycopg.errors.UniqueViolation) and "runs_one_running" in str(e.__cause__):
                raise SessionInProgress() from e
            raise

    async def finish_run(
        self,
        run_id: str,
        finish: RunFinish,
        owner: RunOwner | None = None,
        heartbeat: datetime | None = None,
    ) -> bool | QueuedMessage:
        move = finish.transition
        sql = (
            "UPDATE runs SET status = %s, error_code = %s, error_message = %s, finished_at = %s, "
            "ended_at = now() WHERE id = %s AND status = %s"
        )
        error = finish.error
        args: list[object] = [move.target.value, error.code if error else None, error.message if error else None]
        args += [stamp(finish.now), run_id, move.source.value]
        if owner is not None:
            sql += " AND owner_instance = %s"
            args.append(owner.instance)
        if heartbeat is not None:
            sql += " AND heartbeat_at = %s"
            args.append(heartbeat)
        event = finish.event
        await self.ready()
        async with self.db.cursor(transaction=True) as cur:
            await cur.execute(sql + " RETURNING conversation_id", args)
            row = await cur.fetchone()
            if row is None:
                return False
            await cur.execute(
                "UPDATE conversations SET updated_at = %s, message_count = coalesce(%s, message_count) WHERE id = %s",
                (stamp(finish.now), finish.message_count, row[0]),
            )
            if finish.events:
                await cur.executemany(
                    "INSERT INTO run_events (run_id, seq, event, data) VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    [(run_id, seq, name, Jsonb(data)) for seq, name, data in pack(finish.events)],
                )
            if event is not None:
                await cur.execute(
                    "INSERT INTO run_events (run_id, seq, event, data) VALUES (%s, greatest(%s, "
                    "(SELECT coalesce(max(seq), 0) + 1 FROM run_events WHERE run_id = %s)), %s, %s)",
                    (run_id, finish.event_id or 0, run_id, event.event, Jsonb(event.data)),
                )
                await cur.execute(NOTIFY, ([run_id],))
            if not finish.input_recorded:
                await firing_unsaved(cur, run_id)
            await record_delivery(cur, run_id, row[0], finish)
            started = await after_finish(cur, run_id, row[0], finish)
        if event is not None:
            self._wakeups.wake([run_id])
        return started or True

    async def give_up(self, run_id: str, error: RunError, now: datetime) -> bool:
        return bool(
            await self._rows(
                "UPDATE runs SET status = %s, error_code = %s, error_message = %s, finished_at = %s, "
                "ended_at = now() WHERE id = %s AND status = %s RETURNING id",
                (GIVE_UP.target.value, error.code, error.message, stamp(now), run_id, GIVE_UP.source.value),
            )
        )

    async def get_run(self, run_id: str) -> Run | None:
        rows = await self._rows(RUNS + " WHERE r.id = %(id)s", {"lease": 0, "id": run_id})
        return run_from_row(rows[0]) if rows else None

    async def latest_run(self, conversation_id: str, lease_seconds: float = 0.0) -> Run | None:
        rows = await self._rows(
            RUNS + " WHERE r.conversation_id = %(cid)s" + LATEST + " LIMIT 1",
            {"lease": lease_seconds, "cid": conversation_id},
        )
        return run_from_row(rows[0]) if rows else None

    async def thread_metadata(self, conversation_ids: Sequence[str]) -> Mapping[str, Mapping[str, Any]]:
        rows = await self._rows(
            "SELECT conversation_id, metadata FROM thread_metadata WHERE conversation_id = ANY(%s)",
            (list(conversation_ids),),
        )
        return {r[0]: r[1] for r in rows}

    async def merge_thread_metadata(self, conversation_id: str, metadata: Mapping[str, Any]) -> bool:
        # jsonb `||` merges key by key; the conversation's row must exist (its foreign key)
        rows = await self._rows(
            "INSERT INTO thread_metadata (conversation_id, metadata) "
            "SELECT id, %(m)s FROM conversations WHERE id = %(cid)s "
            "ON CONFLICT (conversation_id) DO UPDATE SET metadata = thread_metadata.metadata || EXCLUDED.metadata "
            "RETURNING 1",
            {"m": Jsonb(dict(metadata)), "cid": conversation_id},
        )
        return bool(rows)

    async def run_kwargs(self, conversation_id: str, run_id: str, owner: str | None = None) -> Mapping[str, Any] | None:
        rows = await self._rows(
            "SELECT k.kwargs FROM run_kwargs k JOIN conversations c ON c.id = k.conversation_id "
            "WHERE k.run_id = %(rid)s AND k.conversation_id = %(cid)s AND (%(o)s::text IS NULL OR c.owner = %(o)s)",
            {"rid": run_id, "cid": conversation_id, "o": owner},
        )
        return rows[0][0] if rows else None

    async def set_run_kwargs(
        self, conversation_id: str, run_id: str, kwargs: Mapping[str, Any], owner: str | None = None
    ) -> bool:
        rows = await self._rows(
            "INSERT INTO run_kwargs (run_id, conversation_id, kwargs) SELECT %(rid)s, id, %(k)s FROM conversations "
            "WHERE id = %(cid)s AND (%(o)s::text IS NULL OR owner = %(o)s) "
            "ON CONFLICT (run_id) DO UPDATE SET kwargs = EXCLUDED.kwargs RETURNING 1",
            {"rid": run_id, "k": Jsonb(dict(kwargs)), "cid": conversation_id, "o": owner},
        )
        return bool(rows)

    async def recent_runs(self, conversation_id: str, limit: int) -> Sequence[Run]:
        rows = await self._rows(
            RUNS + " WHERE r.conversation_id = %(cid)s" + LATEST + " LIMIT %(limit)s",
            {"lease": 0, "cid": conversation_id, "limit": limit},
        )
        return [run_from_row(r) for r in rows]

    async def running_runs(self, lease_seconds: float = 0.0) -> Sequence[Run]:
        rows = await self._rows(RUNS + " WHERE r.status = 'running' ORDER BY r.started_at, r.n", {"lease": lease_seconds})
        return [run_from_row(r) for r in rows]

    async def interrupted_conversations(self) -> Sequence[Run]:
        rows = await self._rows(
            RUNS + " WHERE r.id IN (SELECT l.id FROM conversations c CROSS JOIN LATERAL (SELECT id, status "
            "FROM runs WHERE conversation_id = c.id ORDER BY started_at DESC, n DESC LIMIT 1) l "
            "WHERE l.status = 'interrupted') ORDER BY r.started_at, r.n",
            {"lease": 0},
        )
        return [run_from_row(r) for r in rows]

    async def renew(self, owner: RunOwner, run_ids: Sequence[str]) -> set[str]:
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            return set()
        rows = await self._rows(
            "UPDATE runs SET heartbeat_at = now() WHERE status = 'running' AND owner_instance = %s AND id = ANY(%s) RETURNING id",
            (owner.instance, ids),
        )
        return {r[0] for r in rows}
