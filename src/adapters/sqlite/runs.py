"""The run store on the SQLite file: conversations, runs, their events, cancel requests and
the tool journal (RunRepository here, RunEventLog, RunSignals and ToolJournal from
adapters.sqlite.events, in one class on one writer, so an outcome and its terminal event are
one transaction)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import datetime
from functools import partial

from adapters.sqlite.approvals import SqliteApprovals
from adapters.sqlite.database import (
    FileIdentity,
    Worker,
    connect,
    integrity_problem,
    migrate,
    transaction,
    unsynced,
)
from adapters.sqlite.events import SqliteRunEvents
from adapters.sqlite.metadata import SqliteThreadMetadata
from adapters.sqlite.organise import SqliteOrganising, shown_sql
from adapters.sqlite.queue import SqliteQueue, after_finish
from adapters.sqlite.rows import (
    NOW,
    OWNER_LOAD,
    RUNS,
    SUMMARY,
    conversation_from_row,
    insert_running,
    marks,
    run_from_row,
)
from adapters.sqlite.schedules import SqliteSchedules, claim_firing, firing_unsaved
from adapters.sqlite.search_schema import stem_title
from adapters.sqlite.webhooks import SqliteWebhooks, record_delivery
from adapters.storage.event_rows import pack
from adapters.storage.wakeups import Wakeups
from domain.errors import SessionInProgress, UserLimitReached
from domain.lifecycle import GIVE_UP
from domain.model import Conversation, Run, RunError, RunOwner, TitleSource, iso
from domain.models import ChatSettings
from domain.organise import Shown
from domain.principals import BOOTSTRAP_ID
from domain.queue import QueuedMessage
from domain.schedules import FiringClaim
from ports.metrics import NO_METRICS, MetricsPort
from ports.runs import LoadCap, RunFinish, RunRepository


class SqliteRunStore(
    SqliteRunEvents,
    SqliteThreadMetadata,
    SqliteApprovals,
    SqliteQueue,
    SqliteSchedules,
    SqliteWebhooks,
    SqliteOrganising,
    RunRepository,
):
    """Two connections to the file, each on its own thread: a writer (every write is a
    BEGIN IMMEDIATE transaction, so processes on one file queue behind `busy_timeout`
    seconds, then get StorageFailure) and a reader, which in WAL mode never waits for a
    writer. Opening migrates the file and blocks: do it at startup or through `open`."""

    def __init__(
        self, path: str, busy_timeout: float = 5.0, poll_interval: float = 0.05, metrics: MetricsPort = NO_METRICS
    ) -> None:
        self.path = path
        self.poll_interval = poll_interval  # how often `wait` polls for other processes' events
        self._wakeups = Wakeups()
        self.file: FileIdentity | None = None  # set once the file exists
        self._writer = Worker(
            "writer",
            partial(connect, path, busy_timeout),
            metrics,
            before=self._check_file,
            shared_path=path,
            busy_timeout=busy_timeout,
        )
        try:
            self.schema_version = self._writer.call(migrate)
            self.file = FileIdentity(path)  # the file exists now
            self._reader = Worker("reader", partial(_open_reader, path, busy_timeout), metrics)
        except BaseException:
            self._writer.close()
            raise

    @classmethod
    async def open(cls, path: str, busy_timeout: float = 5.0, poll_interval: float = 0.05) -> SqliteRunStore:
        """Open (and migrate) without blocking the event loop."""
        return await asyncio.to_thread(cls, path, busy_timeout, poll_interval)

    def close(self) -> None:
        """Finish the calls already sent, then close both connections (blocking)."""
        self._reader.close()
        self._writer.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def workers(self) -> tuple[Worker, Worker]:
        """The writer and the reader, for a store that keeps its tables in this file (sessions)."""
        return self._writer, self._reader

    def _check_file(self) -> None:
        if self.file is not None:
            self.file.check()

    def storage_problem(self) -> str | None:
        """Why the database cannot be used now (its file deleted or replaced), or None."""
        return self.file.problem() if self.file is not None else None

    def integrity_problem(self) -> str | None:
        """`PRAGMA quick_check`: None when the file is sound, else our message. Blocking
        (it reads the whole file): for start-up and `doctor`."""
        return self.storage_problem() or self._reader.call(integrity_problem)

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
        def write(c: sqlite3.Connection) -> None:
            # no fsync: a new conversation always gets its first message, a synced commit
            with unsynced(c), transaction(c):
                c.execute(
                    "INSERT INTO conversations (id, title, created_at, updated_at, message_count, model, system, owner, "
                    "system_mode, title_by, temporary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        conversation_id,
                        title,
                        iso(now),
                        iso(now),
                        message_count,
                        settings.model,
                        settings.system,
                        owner,
                        settings.system_mode.value,
                        title_by.value,
                        int(temporary),
                    ),
                )
                stem_title(c.cursor(), conversation_id)  # the trigger wrote its entry

        await self._writer.run(write)
        stamp = datetime.fromisoformat(iso(now))  # stored with milliseconds
        return Conversation(
            conversation_id,
            title,
            stamp,
            stamp,
            message_count,
            model=settings.model,
            system=settings.system,
            owner=owner,
            system_mode=settings.system_mode,
            title_by=title_by,
            temporary=temporary,
        )

    async def set_chat_settings(self, conversation_id: str, settings: ChatSettings) -> bool:
        def write(c: sqlite3.Connection) -> bool:
            with transaction(c):
                cur = c.execute(
                    "UPDATE conversations SET model = ?, system = ?, system_mode = ? WHERE id = ?",
                    (settings.model, settings.system, settings.system_mode.value, conversation_id),
                )
            return cur.rowcount > 0

        return await self._writer.run(write)

    async def get_conversation(self, conversation_id: str) -> Conversation | None:
        rows = await self._read(SUMMARY + " WHERE c.id = ?", (conversation_id,))
        return conversation_from_row(rows[0]) if rows else None

    async def list_conversations(
        self,
        limit: int | None = None,
        before: tuple[datetime, str] | None = None,
        query: str = "",
        owner: str | None = None,
        shown: Shown = Shown(),  # noqa: B008 - a frozen value
    ) -> Sequence[Conversation]:
        kept, args = shown_sql(shown)
        sql = SUMMARY + " WHERE 1" + kept
        if owner is not None:
            sql += " AND c.owner = ?"
            args.append(owner)
        if before is not None:
            sql += " AND (c.updated_at, c.id) < (?, ?)"
            args += [iso(before[0]), before[1]]
        if query:
            sql += " AND instr(casefold(c.title), ?) > 0"
            args.append(query.casefold())
        sql += " ORDER BY c.updated_at DESC, c.id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [conversation_from_row(r) for r in await self._read(sql, args)]

    async def owner_load(self, owner: str) -> int:
        return int((await self._read(OWNER_LOAD, [owner, owner]))[0][0])

    async def give_conversations(self, from_owner: str, to_owner: str) -> int:
        def write(c: sqlite3.Connection) -> int:
            with transaction(c):
                c.execute("UPDATE schedules SET owner = ? WHERE owner = ?", (to_owner, from_owner))
                return c.execute("UPDATE conversations SET owner = ? WHERE owner = ?", (to_owner, from_owner)).rowcount

        return await self._writer.run(write)

    async def find_conversations(self, id_prefix: str, limit: int, owner: str | None = None) -> Sequence[Conversation]:
        # a range on the primary key, not LIKE (case-insensitive in SQLite, so no index):
        # '~' sorts after every character an id holds
        mine = "" if owner is None else " AND c.owner = ?"
        sql = SUMMARY + f" WHERE c.id >= ? AND c.id < ? AND c.temporary = 0{mine} ORDER BY c.updated_at DESC, c.id DESC LIMIT ?"
        args: list[object] = [id_prefix, id_prefix + "~", *([] if owner is None else [owner]), limit]
        return [conversation_from_row(r) for r in await self._read(sql, args)]

    async def restore_conversation(self, conversation_id: str, message_count: int, updated_at: datetime) -> bool:
        def write(c: sqlite3.Connection) -> bool:
            with transaction(c):
                cur = c.execute(
                    "UPDATE conversations SET message_count = ?, updated_at = ? WHERE id = ?",
                    (message_count, iso(updated_at), conversation_id),
                )
            return cur.rowcount > 0

        return await self._writer.run(write)

    async def rename_conversation(self, conversation_id: str, title: str, now: datetime) -> bool:
        def write(c: sqlite3.Connection) -> bool:
            with transaction(c):
                cur = c.execute(
                    "UPDATE conversations SET title = ?, updated_at = ?, title_by = 'user' WHERE id = ?",
                    (title, iso(now), conversation_id),
                )
                stem_title(c.cursor(), conversation_id)  # the trigger wrote the new title
            return cur.rowcount > 0

        return await self._writer.run(write)

    async def delete_conversation(self, conversation_id: str) -> bool:
        def write(c: sqlite3.Connection) -> bool:
            with transaction(c):
                running = c.execute(
                    "SELECT 1 FROM runs WHERE conversation_id = ? AND status = 'running'", (conversation_id,)
                ).fetchone()
                if running:
                    raise SessionInProgress()
                # runs, their events, the journal and the queue go by ON DELETE CASCADE
                cur = c.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))
            return cur.rowcount > 0

        return await self._writer.run(write)

    # --- runs ----------------------------------------------------------------------------

    async def start_run(
        self,
        run: Run,
        now: datetime,
        flushed_by_input: bool = False,
        cap: LoadCap | None = None,
        firing: FiringClaim | None = None,
    ) -> None:
        def write(c: sqlite3.Connection) -> None:
            # WAL frames are ordered: the input's synced commit makes this row durable too
            with unsynced(c) if flushed_by_input else nullcontext(), transaction(c):
                # BEGIN IMMEDIATE: the file's one writer, whatever the process, so the load
                # read here is the load the insert adds to
                if cap is not None and c.execute(OWNER_LOAD, (cap.owner, cap.owner)).fetchone()[0] >= cap.limit:
                    raise UserLimitReached()
                if firing is not None:  # the same transaction: both or neither
                    claim_firing(c, firing, run.id, run.conversation_id, queued=False)
                insert_running(c, run, now)

        await self._writer.run(write)

    async def finish_run(
        self,
        run_id: str,
        finish: RunFinish,
        owner: RunOwner | None = None,
        heartbeat: datetime | None = None,
    ) -> bool | QueuedMessage:
        move = finish.transition
        sql = "UPDATE runs SET status = ?, error_code = ?, error_message = ?, finished_at = ? WHERE id = ? AND status = ?"
        error = finish.error
        code, message = (error.code, error.message) if error else (None, None)
        args: list[object] = [move.target.value, code, message, iso(finish.now), run_id, move.source.value]
        if owner is not None:
            sql += " AND owner_instance = ?"
            args.append(owner.instance)
        if heartbeat is not None:
            sql += " AND heartbeat_at = ?"
            args.append(iso(heartbeat))
        event = finish.event
        data = json.dumps(event.data) if event else None
        pending = [(run_id, seq, name, json.dumps(data)) for seq, name, data in pack(finish.events)]

        def write(c: sqlite3.Connection) -> bool | QueuedMessage:
            with transaction(c):
                row = c.execute(sql + " RETURNING conversation_id", args).fetchone()
                if row is None:
                    return False
                if finish.message_count is None:
                    c.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (iso(finish.now), row[0]))
                else:
                    c.execute(
                        "UPDATE conversations SET updated_at = ?, message_count = ? WHERE id = ?",
                        (iso(finish.now), finish.message_count, row[0]),
                    )
                if pending:  # the last events, with the outcome: one transaction less per run
                    c.executemany("INSERT OR IGNORE INTO run_events (run_id, seq, event, data) VALUES (?, ?, ?, ?)", pending)
                if event is not None:
                    c.execute(
                        "INSERT INTO run_events (run_id, seq, event, data) VALUES (?, max(?, "
                        "(SELECT coalesce(max(seq), 0) + 1 FROM run_events WHERE run_id = ?)), ?, ?)",
                        (run_id, finish.event_id or 0, run_id, event.event, data),
                    )
                if not finish.input_recorded:
                    firing_unsaved(c, run_id)
                record_delivery(c, run_id, row[0], finish)
                started = after_finish(c, run_id, row[0], finish)
            return started or True

        finished = await self._writer.run(write)
        if finished and (event is not None or pending):
            self._wakeups.wake([run_id])
        return finished

    async def give_up(self, run_id: str, error: RunError, now: datetime) -> bool:
        def write(c: sqlite3.Connection) -> bool:
            with transaction(c):
                cur = c.execute(
                    "UPDATE runs SET status = ?, error_code = ?, error_message = ?, finished_at = ? WHERE id = ? AND status = ?",
                    (GIVE_UP.target.value, error.code, error.message, iso(now), run_id, GIVE_UP.source.value),
                )
            return cur.rowcount > 0

        return await self._writer.run(write)

    async def get_run(self, run_id: str) -> Run | None:
        rows = await self._read(RUNS + " WHERE id = ?", (0, 0, run_id))
        return run_from_row(rows[0]) if rows else None

    async def latest_run(self, conversation_id: str, lease_seconds: float = 0.0) -> Run | None:
        rows = await self._read(
            RUNS + " WHERE conversation_id = ? ORDER BY started_at DESC, rowid DESC LIMIT 1",
            (lease_seconds, lease_seconds, conversation_id),
        )
        return run_from_row(rows[0]) if rows else None

    async def conversation_and_latest_run(
        self, conversation_id: str, lease_seconds: float = 0.0
    ) -> tuple[Conversation | None, Run | None]:
        def read(c: sqlite3.Connection) -> tuple[Conversation | None, Run | None]:
            found = c.execute(SUMMARY + " WHERE c.id = ?", (conversation_id,)).fetchone()
            if found is None:
                return None, None
            latest = c.execute(
                RUNS + " WHERE conversation_id = ? ORDER BY started_at DESC, rowid DESC LIMIT 1",
                (lease_seconds, lease_seconds, conversation_id),
            ).fetchone()
            return conversation_from_row(found), run_from_row(latest) if latest else None

        return await self._reader.run(read)  # one round trip to the reader, not two

    async def recent_runs(self, conversation_id: str, limit: int) -> Sequence[Run]:
        rows = await self._read(
            RUNS + " WHERE conversation_id = ? ORDER BY started_at DESC, rowid DESC LIMIT ?",
            (0, 0, conversation_id, limit),
        )
        return [run_from_row(r) for r in rows]

    async def running_runs(self, lease_seconds: float = 0.0) -> Sequence[Run]:
        rows = await self._read(RUNS + " WHERE status = 'running' ORDER BY started_at, rowid", (lease_seconds, lease_seconds))
        return [run_from_row(r) for r in rows]

    async def interrupted_conversations(self) -> Sequence[Run]:
        rows = await self._read(
            RUNS + " WHERE status = 'interrupted' AND rowid IN (SELECT (SELECT rowid FROM runs "
            "WHERE conversation_id = c.id ORDER BY started_at DESC, rowid DESC LIMIT 1) FROM conversations c) "
            "ORDER BY started_at, rowid",
            (0, 0),
        )
        return [run_from_row(r) for r in rows]

    async def renew(self, owner: RunOwner, run_ids: Sequence[str]) -> set[str]:
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            return set()
        sql = (
            f"UPDATE runs SET heartbeat_at = {NOW} WHERE status = 'running' AND owner_instance = ? "
            f"AND id IN ({marks(ids)}) RETURNING id"
        )

        def write(c: sqlite3.Connection) -> set[str]:
            # no fsync: a heartbeat matters only while its process lives, and a power cut
            # ends the process too
            with unsynced(c), transaction(c):
                return {r[0] for r in c.execute(sql, (owner.instance, *ids)).fetchall()}

        return await self._writer.run(write)


def _open_reader(path: str, busy_timeout: float) -> sqlite3.Connection:
    conn = connect(path, busy_timeout)
    conn.execute("PRAGMA query_only = ON")  # the reader never writes, by construction
    # title search folds case as Python does (SQLite's lower() and LIKE fold ASCII only)
    conn.create_function("casefold", 1, lambda s: s.casefold() if isinstance(s, str) else s, deterministic=True)
    return conn
