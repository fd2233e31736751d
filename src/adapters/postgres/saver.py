"""LangGraph's official AsyncPostgresSaver, fenced, with linear storage, on a shared pool.

- Fencing in the same transaction: the official saver writes in autocommit. Here `aput`
  and `aput_writes` run in one transaction that first checks (FOR SHARE, so a reclaim of
  the run waits for it) that the run in the config is still `running`; the checkpoint, its
  blobs, its log row and the retention commit together, or nothing does (RunLost).
- Linear storage: the official saver stores a new blob of every changed channel (the
  whole message list) per checkpoint, so a thread grows with the square of its length
  (132 MB after 300 turns, measured). Here, as on SQLite, each message of the main graph is
  stored once, in its own row, and the `messages` blob holds their digests
  (adapters.storage.message_refs, adapters.postgres.message_rows): a turn writes what it
  adds. Each `aput` also writes a summary of the checkpoint to `checkpoint_log` (the JSONL
  export) and deletes the thread's checkpoints older than the last `keep`, their writes, the
  blobs no kept checkpoint refers to and the message rows no kept blob refers to.
- Reads in one REPEATABLE READ transaction: a checkpoint and the message rows it refers to
  are one snapshot. The latest checkpoint this process wrote is served from memory while
  the database says it is still the latest (adapters.langgraph.latest), so a run starts on
  the very message objects whose digests are known, and encodes only what it adds.
- No per-instance lock: the official saver holds one asyncio.Lock around every query,
  even on a pool, which serializes a whole server (langgraph#7259). Each query here takes
  its own pooled connection.
- Errors: psycopg and pool errors become StorageFailure, so a run fails with a clear code.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any

import psycopg
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.postgres.base import BasePostgresSaver
from psycopg import AsyncConnection, AsyncCursor
from psycopg.rows import DictRow, dict_row
from psycopg_pool import PoolTimeout

from adapters.langgraph import branching
from adapters.langgraph.keys import INPUT_TASK, KEEP_ALL_KEY, RUN_KEY
from adapters.langgraph.latest import LatestCheckpoints
from adapters.langgraph.rows import summary_row
from adapters.langgraph.saver import MessagesOnce, Saver
from adapters.langgraph.serde import MessageMemoSerializer
from adapters.postgres import branches, file_rows, message_rows
from adapters.postgres.database import PostgresDatabase, storage_failure
from adapters.postgres.message_schema import SAVER_TABLES, UNTUNED, tuning
from adapters.postgres.search import forget_thread
from adapters.postgres.search_sync import index_checkpoint, index_input, index_missing, rebuild
from adapters.storage import message_refs
from adapters.storage.checkpoint_log import HISTORY_COLUMNS, head_from_row, summary_from_row
from adapters.storage.message_refs import SEQS_TYPE, MessageSeqs, as_runs, pack_seqs, unpack_seqs
from domain.attachments import StoredFile, Upload
from domain.branches import Branch
from domain.errors import RunLost
from domain.model import CheckpointSummary, iso, utc_now
from ports.saver import BranchContent, MessageFields, StoredHead

# The connection of the transaction (or migration) in progress in this task, if any: the
# official saver's queries made inside it run on it instead of taking another connection.
_current: ContextVar[AsyncConnection[Any] | None] = ContextVar("sophos_pg_connection", default=None)

OLDER = (
    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = %(t)s AND checkpoint_ns = %(ns)s "
    "ORDER BY checkpoint_id DESC OFFSET %(keep)s"
)
RETENTION = (
    f"DELETE FROM checkpoint_writes WHERE thread_id = %(t)s AND checkpoint_ns = %(ns)s AND checkpoint_id IN ({OLDER})",
    f"DELETE FROM checkpoints WHERE thread_id = %(t)s AND checkpoint_ns = %(ns)s AND checkpoint_id IN ({OLDER})",
    "WITH gone AS (DELETE FROM checkpoint_blobs b WHERE b.thread_id = %(t)s AND b.checkpoint_ns = %(ns)s "
    "AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns "
    "AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version) RETURNING b.channel, b.type, b.blob) "
    f"SELECT blob FROM gone WHERE channel = 'messages' AND type = '{SEQS_TYPE}'",
)
"""Keep a thread's latest `keep` checkpoints, their writes, and the blobs they refer to; the
last statement returns the message references it deleted (see message_rows.collect)."""
PENDING_WRITES = (
    "SELECT task_id, channel, type, blob, task_path, idx FROM checkpoint_writes "
    "WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s"
)
LATEST_ID = (
    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = %s ORDER BY checkpoint_id DESC LIMIT 1"
)

LOG_ROW = (
    "INSERT INTO checkpoint_log (thread_id, checkpoint_ns, checkpoint_id, created_at, step, source, next, "
    "message_count, last_message, run_id, branch) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO NOTHING"
)


class FencedPostgresSaver(AsyncPostgresSaver, Saver, MessagesOnce):
    def __init__(self, db: PostgresDatabase, keep: int = 3) -> None:
        # not AsyncPostgresSaver.__init__: it needs a running loop and a connection of its
        # own; queries here go through `_cursor`, on the shared pool
        self.codec = MessageMemoSerializer()
        BasePostgresSaver.__init__(self, serde=self.codec)
        self.db = db
        self.latest = LatestCheckpoints()
        self.numbering = message_rows.Numbering()
        self.keep = keep  # checkpoints kept per thread; 0 keeps all (the plain saver)
        self.pipe = None
        self.lock = asyncio.Lock()  # unused: kept for the parent's type
        self.supports_pipeline = False
        db.also_migrate(self._setup_on)

    async def _setup_on(self, conn: AsyncConnection[Any]) -> None:
        token = _current.set(conn)
        try:
            await self.setup()
        finally:
            _current.reset(token)
        cur = await conn.execute(UNTUNED, (list(SAVER_TABLES),))
        for (table,) in await cur.fetchall():
            await conn.execute(tuning(table).encode())
        await index_missing(conn)  # threads stored before the search index existed

    @asynccontextmanager
    async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[AsyncCursor[DictRow]]:
        try:
            current = _current.get()
            if current is not None:
                async with current.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur
                return
            pool = await self.db.pool()
            async with pool.connection() as conn:
                if pipeline:  # the parent's several statements of one write: one transaction
                    async with conn.transaction(), conn.cursor(binary=True, row_factory=dict_row) as cur:
                        yield cur
                else:
                    async with conn.cursor(binary=True, row_factory=dict_row) as cur:
                        yield cur
        except (psycopg.Error, PoolTimeout) as e:
            raise storage_failure(e) from e

    @asynccontextmanager
    async def _fenced(self, config: RunnableConfig) -> AsyncIterator[AsyncCursor[Any]]:
        """BEGIN … COMMIT on one connection; a write for a run that is no longer running
        raises RunLost and is rolled back."""
        pool = await self.db.pool()
        try:
            async with pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
                run_id = config["configurable"].get(RUN_KEY)
                if run_id is not None:
                    await cur.execute("SELECT status FROM runs WHERE id = %s FOR SHARE", (str(run_id),))
                    row = await cur.fetchone()
                    if row is None or row[0] != "running":
                        raise RunLost()
                token = _current.set(conn)
                try:
                    yield cur
                finally:
                    _current.reset(token)
        except (psycopg.Error, PoolTimeout) as e:
            raise storage_failure(e) from e

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        configurable = config["configurable"]
        thread_id, ns = str(configurable["thread_id"]), str(configurable.get("checkpoint_ns", ""))
        summary = summary_row(checkpoint, get_checkpoint_metadata(config, metadata))
        op = branching.op_of(config) if not ns else None
        planned = self._plan(thread_id, ns, checkpoint)
        numbers = self.numbering.get(thread_id, ns, planned.base) if planned is not None else None
        files = self.file_stage.taken(thread_id, checkpoint["channel_values"].values()) if not ns else []
        async with self._fenced(config) as cur:  # one transaction: fence, branch, checkpoint, summary, index, retention
            await file_rows.store(cur, thread_id, files)  # the files of a message it stores first
            if op is not None:
                await branches.apply(cur, thread_id, op, dict(checkpoint), summary[4])
            branch = await branches.active_number(cur, thread_id) if not ns else None
            stored, seqs = checkpoint, None
            if planned is not None and "messages" in new_versions:  # the blob holds their numbers
                numbers = await message_rows.store(cur, thread_id, ns, planned, numbers)
                seqs = as_runs(numbers)
                stored = {**checkpoint, "channel_values": {**checkpoint["channel_values"], "messages": seqs}}
            next_config = await super().aput(config, stored, metadata, new_versions)
            await cur.execute(LOG_ROW, (thread_id, ns, checkpoint["id"], *summary, branch))
            if not ns:
                await index_checkpoint(cur, thread_id, checkpoint)
            if self.keep > 0 and not config["configurable"].get(KEEP_ALL_KEY):  # a hosted graph's: all kept
                await self._retain(cur, thread_id, ns, self.keep, seqs)
        self.file_stage.stored(thread_id, files)
        meta = json.dumps(get_serializable_checkpoint_metadata(config, metadata)).encode()
        self.latest.remember(
            thread_id, ns, checkpoint, meta, configurable.get("checkpoint_id"), planned.refs if planned else None
        )
        if planned is not None and numbers is not None:
            self.numbering.remember(thread_id, ns, checkpoint["id"], numbers)
        return next_config

    @staticmethod
    async def _retain(cur: AsyncCursor[Any], thread_id: str, ns: str, keep: int, adding: MessageSeqs | None) -> None:
        args = {"t": thread_id, "ns": ns, "keep": keep}
        for sql in RETENTION[:-1]:
            await cur.execute(sql, args)
        await cur.execute(RETENTION[-1], args)
        gone = [bytes(r[0]) for r in await cur.fetchall()]
        await message_rows.collect(cur, thread_id, ns, gone, adding)

    def _dump_blobs(
        self, thread_id: str, checkpoint_ns: str, values: dict[str, Any], versions: ChannelVersions
    ) -> list[tuple[str, str, str, str, str, bytes | None]]:
        seqs = values.get("messages")
        if not isinstance(seqs, MessageSeqs):
            return super()._dump_blobs(thread_id, checkpoint_ns, values, versions)
        others = {k: v for k, v in versions.items() if k != "messages"}
        rows = super()._dump_blobs(thread_id, checkpoint_ns, values, others)
        if "messages" in versions:
            rows.append((thread_id, checkpoint_ns, "messages", str(versions["messages"]), SEQS_TYPE, pack_seqs(seqs)))
        return rows

    def _load_blobs(self, blob_values: list[tuple[bytes, bytes, bytes]]) -> dict[str, Any]:
        seqs = [(k, v) for k, t, v in blob_values or () if t == SEQS_TYPE.encode()]
        loaded = super()._load_blobs([b for b in blob_values or () if b[1] != SEQS_TYPE.encode()])
        return {**loaded, **{k.decode(): unpack_seqs(v) for k, v in seqs}}

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[AsyncConnection[Any]]:
        """One REPEATABLE READ transaction for what the official reads do inside it: a
        checkpoint and the message rows it refers to are one snapshot."""
        current = _current.get()
        if current is not None:
            yield current
            return
        pool = await self.db.pool()
        try:
            async with pool.connection() as conn, conn.transaction():
                await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                token = _current.set(conn)
                try:
                    yield conn
                finally:
                    _current.reset(token)
        except (psycopg.Error, PoolTimeout) as e:
            raise storage_failure(e) from e

    async def _resolve(self, conn: AsyncConnection[Any], found: Sequence[CheckpointTuple]) -> None:
        """Put each checkpoint's messages back from their rows, in place."""
        by_thread: dict[tuple[str, str], list[CheckpointTuple]] = {}
        for t in found:
            if isinstance(t.checkpoint["channel_values"].get("messages"), MessageSeqs):
                c = t.config["configurable"]
                by_thread.setdefault((str(c["thread_id"]), str(c.get("checkpoint_ns", ""))), []).append(t)
        for (thread_id, ns), tuples in by_thread.items():
            async with conn.cursor() as cur:
                rows = await message_rows.rows_of(
                    cur, thread_id, ns, [t.checkpoint["channel_values"]["messages"] for t in tuples]
                )
            try:
                for t in tuples:
                    values = t.checkpoint["channel_values"]
                    values["messages"] = self.codec.loads_typed(("msgpack", message_rows.packed_list(values["messages"], rows)))
            except message_refs.DanglingMessage as e:
                raise storage_failure(e) from e

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        async with self._reading() as conn:
            if get_checkpoint_id(config) is None:
                hit = await self._latest_tuple(conn, config)
                if hit is not None:
                    return hit
            found = await super().aget_tuple(config)
            if found is not None:
                await self._resolve(conn, [found])
            return found

    async def _latest_tuple(self, conn: AsyncConnection[Any], config: RunnableConfig) -> CheckpointTuple | None:
        """The thread's latest checkpoint from memory, if it is still the latest stored."""
        thread_id, ns = str(config["configurable"]["thread_id"]), str(config["configurable"].get("checkpoint_ns", ""))
        cached = self.latest.get(thread_id, ns)
        if cached is None:
            return None
        async with conn.cursor() as cur:
            await cur.execute(LATEST_ID, (thread_id, ns))
            row = await cur.fetchone()
            if row is None or row[0] != cached.checkpoint["id"]:
                return None
            await cur.execute(PENDING_WRITES, (thread_id, ns, row[0]))
            stored = [
                (str(t).encode(), str(c).encode(), str(ty).encode(), bytes(b), str(p).encode(), str(i).encode())
                for t, c, ty, b, p, i in await cur.fetchall()
            ]
        writes = await asyncio.to_thread(self._load_writes, stored)
        return cached.tuple(thread_id, ns, writes)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        async with self._reading() as conn:
            found = [t async for t in super().alist(config, filter=filter, before=before, limit=limit)]
            await self._resolve(conn, found)
        for t in found:
            yield t

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        thread_id, ns = str(config["configurable"]["thread_id"]), config["configurable"].get("checkpoint_ns")
        files = self.file_stage.taken(thread_id, [v for _, v in writes]) if not ns else []
        async with self._fenced(config) as cur:
            await file_rows.store(cur, thread_id, files)  # a new message's files, with it
            await super().aput_writes(config, writes, task_id, task_path)
            if task_id == INPUT_TASK and not ns:
                await index_input(cur, thread_id, writes)
        self.file_stage.stored(thread_id, files)

    async def adelete_thread(self, thread_id: str) -> None:
        self.latest.forget(str(thread_id))
        self.numbering.forget(str(thread_id))
        async with self._cursor(pipeline=True) as cur:
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_log", "checkpoint_messages"):
                await cur.execute(f"DELETE FROM {table} WHERE thread_id = %s", (str(thread_id),))
            await cur.execute("DELETE FROM branches WHERE conversation_id = %s", (str(thread_id),))
            await forget_thread(cur, str(thread_id))
            await file_rows.forget(cur, str(thread_id))

    async def release_files(self, thread_id: str, digests: Sequence[str]) -> None:
        if digests:
            async with self.db.cursor(transaction=True) as cur:
                await file_rows.forget(cur, thread_id, digests)

    async def files(self, thread_id: str, digests: Sequence[str]) -> dict[str, StoredFile]:
        async with self.db.cursor() as cur:
            return await file_rows.read(cur, thread_id, digests)

    async def import_branches(self, thread_id: str, branches: Sequence[Branch], own: Mapping[int, Sequence[BaseMessage]]) -> None:
        # encoded off the loop: the import's heavy part (aput encodes a checkpoint on it, as LangGraph's saver does)
        rows = await asyncio.to_thread(branching.imported, branches, own, self.serde.dumps_typed, thread_id, iso(utc_now()))
        files = self.file_stage.taken(thread_id, [list(m) for m in own.values()])
        await self._insert_branches(thread_id, rows, files)
        self.file_stage.stored(thread_id, files)

    async def _insert_branches(self, thread_id: str, rows: list[tuple[Any, ...]], files: list[Upload]) -> None:
        async with self._fenced({"configurable": {"thread_id": thread_id}}) as cur:
            await file_rows.store(cur, thread_id, files)
            await branches.insert(cur, rows)

    async def reindex(self) -> int:
        return await self._on_connection(rebuild)

    async def index_missing(self) -> int:
        """Index the titles and threads stored before the search index existed."""
        return await self._on_connection(index_missing)

    async def _on_connection(self, work: Callable[[AsyncConnection[Any]], Awaitable[int]]) -> int:
        pool = await self.db.pool()
        try:
            async with pool.connection() as conn:
                return await work(conn)
        except (psycopg.Error, PoolTimeout) as e:
            raise storage_failure(e) from e

    # --- SaverPort: the reads of LangGraphThreads (adapters/langgraph/engine.py) --------------

    async def _rows(self, sql: str, args: Sequence[object]) -> list[tuple[Any, ...]]:
        pool = await self.db.pool()
        try:
            async with pool.connection() as conn, conn.cursor() as cur:
                await cur.execute(sql, args)
                return await cur.fetchall()
        except (psycopg.Error, PoolTimeout) as e:
            raise storage_failure(e) from e

    async def head(self, thread_id: str) -> StoredHead | None:
        rows = await self._rows(
            "SELECT l.checkpoint_id, l.next, l.message_count, l.run_id, (SELECT count(*) FROM checkpoint_writes w "
            "WHERE w.thread_id = l.thread_id AND w.checkpoint_ns = '' AND w.checkpoint_id = l.checkpoint_id), "
            "(SELECT count(*) FROM checkpoint_writes w WHERE w.thread_id = l.thread_id AND w.checkpoint_ns = '' "
            "AND w.checkpoint_id = l.checkpoint_id AND w.task_id = %s AND w.channel = 'messages') "
            "FROM checkpoint_log l WHERE l.thread_id = %s AND l.checkpoint_ns = '' "
            "ORDER BY l.checkpoint_id DESC LIMIT 1",
            (INPUT_TASK, thread_id),
        )
        return head_from_row(rows[0] if rows else None)

    async def written_count(self, thread_id: str, run_id: str) -> int | None:
        return None  # several processes write: the database answers

    async def message_fields(self, thread_id: str, checkpoint_id: str) -> Sequence[MessageFields] | None:
        """The messages of a checkpoint as plain field dicts, decoded without building
        LangChain objects. None if they are not stored as msgpack."""
        async with self.db.cursor(transaction=True) as cur:  # the blob and its rows: one snapshot
            await cur.execute(
                "SELECT b.type, b.blob FROM checkpoints c JOIN checkpoint_blobs b ON b.thread_id = c.thread_id "
                "AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = 'messages' "
                "AND b.version = c.checkpoint -> 'channel_versions' ->> 'messages' "
                "WHERE c.thread_id = %s AND c.checkpoint_ns = '' AND c.checkpoint_id = %s",
                (thread_id, checkpoint_id),
            )
            row = await cur.fetchone()
            if row is None:
                return None
            try:
                return await message_rows.plain_fields(cur, thread_id, row[0], row[1])
            except message_refs.DanglingMessage as e:
                raise storage_failure(e) from e

    async def history(self, thread_id: str) -> list[CheckpointSummary]:
        rows = await self._rows(
            f"SELECT {HISTORY_COLUMNS} FROM checkpoint_log WHERE thread_id = %s AND checkpoint_ns = '' ORDER BY checkpoint_id",
            (thread_id,),
        )
        return [summary_from_row(row) for row in rows]

    async def branches(self, thread_id: str) -> list[Branch]:
        async with self.db.cursor() as cur:
            return await branches.load(cur, thread_id)

    async def branch_content(self, thread_id: str, number: int) -> BranchContent | None:
        async with self.db.cursor(transaction=True) as cur:  # one snapshot of the rows and the head
            rows = await branches.load(cur, thread_id)
            if number not in {b.number for b in rows}:
                return None
            _, latest = await branches.latest(cur, thread_id)
            content = branching.branch_content(rows, await branches.deltas(cur, thread_id), number, latest)
            return BranchContent(tuple(content), tuple(await branches.stashed_next(cur, thread_id, number)))
