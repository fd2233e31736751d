"""LangGraph's official AsyncPostgresSaver, fenced, with linear storage, on a shared pool.

- Fencing in the same transaction: the official saver writes in autocommit. Here `aput`
  and `aput_writes` run in one transaction that first checks (FOR SHARE, so a reclaim of
  the run waits for it) that the run in the config is still `running`; the checkpoint, its
  blobs, its log row and the retention commit together, or nothing does (RunLost).
- Linear storage: the official saver stores a new blob of every changed channel (the
  whole message list) per checkpoint, so a thread grows with the square of its length
  (132 MB after 300 turns, measured). Each `aput` also writes a summary of the checkpoint to
  `checkpoint_log` (the JSONL export) and deletes the thread's checkpoints older than the
  last `keep`, their writes, and the blobs no kept checkpoint refers to.
- No per-instance lock: the official saver holds one asyncio.Lock around every query,
  even on a pool, which serializes a whole server (langgraph#7259). Each query here takes
  its own pooled connection.
- Errors: psycopg and pool errors become StorageFailure, so a run fails with a clear code.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any

import ormsgpack
import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata, get_checkpoint_metadata
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.postgres.base import BasePostgresSaver
from psycopg import AsyncConnection, AsyncCursor
from psycopg.rows import DictRow, dict_row
from psycopg_pool import PoolTimeout

from adapters.langgraph import branching
from adapters.langgraph.graph import INPUT_TASK, RUN_KEY
from adapters.langgraph.rows import as_plain, summary_row
from adapters.postgres import branches
from adapters.postgres.database import PostgresDatabase, storage_failure
from adapters.postgres.search import forget_thread
from adapters.postgres.search_sync import index_checkpoint, index_input, index_missing, rebuild
from domain.branches import Branch
from domain.errors import RunLost

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
    "DELETE FROM checkpoint_blobs b WHERE b.thread_id = %(t)s AND b.checkpoint_ns = %(ns)s AND NOT EXISTS ("
    "SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns "
    "AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version)",
)
"""Keep a thread's latest `keep` checkpoints, their writes, and the blobs they refer to."""

LOG_ROW = (
    "INSERT INTO checkpoint_log (thread_id, checkpoint_ns, checkpoint_id, created_at, step, source, next, "
    "message_count, last_message, run_id, branch) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO NOTHING"
)


class FencedPostgresSaver(AsyncPostgresSaver):
    def __init__(self, db: PostgresDatabase, keep: int = 3) -> None:
        # not AsyncPostgresSaver.__init__: it needs a running loop and a connection of its
        # own; queries here go through `_cursor`, on the shared pool
        BasePostgresSaver.__init__(self)
        self.db = db
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
        async with self._fenced(config) as cur:  # one transaction: fence, branch, checkpoint, summary, index, retention
            if op is not None:
                await branches.apply(cur, thread_id, op, dict(checkpoint), summary[4])
            branch = await branches.active_number(cur, thread_id) if not ns else None
            next_config = await super().aput(config, checkpoint, metadata, new_versions)
            await cur.execute(LOG_ROW, (thread_id, ns, checkpoint["id"], *summary, branch))
            if not ns:
                await index_checkpoint(cur, thread_id, checkpoint)
            if self.keep > 0:
                for sql in RETENTION:
                    await cur.execute(sql, {"t": thread_id, "ns": ns, "keep": self.keep})
        return next_config

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        async with self._fenced(config) as cur:
            await super().aput_writes(config, writes, task_id, task_path)
            if task_id == INPUT_TASK and not config["configurable"].get("checkpoint_ns"):
                await index_input(cur, str(config["configurable"]["thread_id"]), writes)

    async def adelete_thread(self, thread_id: str) -> None:
        async with self._cursor(pipeline=True) as cur:
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_log"):
                await cur.execute(f"DELETE FROM {table} WHERE thread_id = %s", (str(thread_id),))
            await cur.execute("DELETE FROM branches WHERE conversation_id = %s", (str(thread_id),))
            await forget_thread(cur, str(thread_id))

    async def reindex(self) -> int:
        """Rebuild the search index from every thread's latest checkpoint."""
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

    # --- the cheap reads of LangGraphThreads (see adapters/langgraph/engine.py) ------------

    async def _rows(self, sql: str, args: Sequence[object]) -> list[tuple[Any, ...]]:
        pool = await self.db.pool()
        try:
            async with pool.connection() as conn, conn.cursor() as cur:
                await cur.execute(sql, args)
                return await cur.fetchall()
        except (psycopg.Error, PoolTimeout) as e:
            raise storage_failure(e) from e

    async def head(self, thread_id: str) -> tuple[Any, ...] | None:
        """(checkpoint_id, next, message_count, run_id, pending writes, messages pending as
        input) of the latest checkpoint, or None."""
        rows = await self._rows(
            "SELECT l.checkpoint_id, l.next, l.message_count, l.run_id, (SELECT count(*) FROM checkpoint_writes w "
            "WHERE w.thread_id = l.thread_id AND w.checkpoint_ns = '' AND w.checkpoint_id = l.checkpoint_id), "
            "(SELECT count(*) FROM checkpoint_writes w WHERE w.thread_id = l.thread_id AND w.checkpoint_ns = '' "
            "AND w.checkpoint_id = l.checkpoint_id AND w.task_id = %s AND w.channel = 'messages') "
            "FROM checkpoint_log l WHERE l.thread_id = %s AND l.checkpoint_ns = '' "
            "ORDER BY l.checkpoint_id DESC LIMIT 1",
            (INPUT_TASK, thread_id),
        )
        return rows[0] if rows else None

    async def latest_message_fields(self, thread_id: str, checkpoint_id: str) -> list[dict[str, Any]] | None:
        """The messages of a checkpoint as plain field dicts, decoded without building
        LangChain objects. None if they are not in one msgpack blob."""
        rows = await self._rows(
            "SELECT b.type, b.blob FROM checkpoints c JOIN checkpoint_blobs b ON b.thread_id = c.thread_id "
            "AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = 'messages' "
            "AND b.version = c.checkpoint -> 'channel_versions' ->> 'messages' "
            "WHERE c.thread_id = %s AND c.checkpoint_ns = '' AND c.checkpoint_id = %s",
            (thread_id, checkpoint_id),
        )
        if not rows or rows[0][0] != "msgpack":
            return None
        messages = ormsgpack.unpackb(rows[0][1], ext_hook=as_plain, option=ormsgpack.OPT_NON_STR_KEYS)
        return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else None

    async def history(self, thread_id: str) -> list[tuple[Any, ...]]:
        """The checkpoint log of a thread, oldest first."""
        return await self._rows(
            "SELECT checkpoint_id, created_at, step, source, next, message_count, last_message, run_id, branch "
            "FROM checkpoint_log WHERE thread_id = %s AND checkpoint_ns = '' ORDER BY checkpoint_id",
            (thread_id,),
        )

    async def branches(self, thread_id: str) -> list[Branch]:
        """Every branch of the thread, by number (empty: never forked)."""
        async with self.db.cursor() as cur:
            return await branches.load(cur, thread_id)

    async def branch_fields(self, thread_id: str, number: int) -> tuple[list[dict[str, Any]], list[str]] | None:
        """As ThreadedSqliteSaver.branch_fields."""
        async with self.db.cursor(transaction=True) as cur:  # one snapshot of the rows and the head
            rows = await branches.load(cur, thread_id)
            if number not in {b.number for b in rows}:
                return None
            _, latest = await branches.latest(cur, thread_id)
            content = branching.branch_content(rows, await branches.deltas(cur, thread_id), number, latest)
            return content, await branches.stashed_next(cur, thread_id, number)

