"""One PostgreSQL database shared by every Sophos process: the connection pool, numbered
migrations that many processes can run at once, and the translation of psycopg errors into
StorageFailure.

Each process has one pool (shared by the run store and the checkpointer) and one dedicated
connection (see presence.py). Connections are taken for one statement or one transaction
and given back at once, so a long model call holds none.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import AsyncConnection, AsyncCursor
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from adapters.postgres.assistant_schema import MIGRATION_ASSISTANTS
from adapters.postgres.branch_schema import MIGRATION_BRANCHES
from adapters.postgres.chat_schema import MIGRATION_CHAT_SETTINGS
from adapters.postgres.file_rows import MIGRATION_FILES
from adapters.postgres.knowledge_schema import MIGRATION_KNOWLEDGE
from adapters.postgres.log_schema import migrate_log_format
from adapters.postgres.message_schema import MIGRATION_MESSAGES
from adapters.postgres.metadata_schema import MIGRATION_RUN_KWARGS, MIGRATION_THREAD_METADATA
from adapters.postgres.organise_schema import add_organising
from adapters.postgres.queue_schema import MIGRATION_QUEUE
from adapters.postgres.schedule_schema import MIGRATION_CRONS, MIGRATION_SCHEDULES
from adapters.postgres.search_schema import add_stems
from adapters.postgres.session_schema import MIGRATION_SESSIONS
from adapters.postgres.store_schema import MIGRATION_STORE, MIGRATION_STORE_VECTORS
from adapters.postgres.trace_schema import MIGRATION_TRACES
from adapters.postgres.usage_schema import MIGRATION_USAGE_AUDIT
from adapters.postgres.user_schema import MIGRATION_OWNER, MIGRATION_USERS, add_rule_owner
from adapters.postgres.webhook_schema import MIGRATION_WEBHOOKS
from domain.errors import StorageFailure

log = logging.getLogger(__name__)

STORAGE_MESSAGE = "The database could not be read or written (unreachable, restarting, full or read-only)"

# Any number to tell our advisory locks from other applications' on a shared server.
MIGRATION_LOCK = 0x50_48_05_05  # pg_try_advisory_lock(bigint): one migrator at a time
# pg_advisory_xact_lock(int, int) with a user's hashtext: the capped run starts of one user
# (USER_MAX_ACTIVE_RUNS) one at a time, on every process
USER_LOAD_LOCK = 0x50_48_05_06
# pg_advisory_xact_lock(int, int) with a user's hashtext: one user's new presets one at a time
PRESET_LOCK = 0x50_48_05_07
# pg_advisory_xact_lock(int, int) with a user's hashtext: one user's new assistants one at a time
ASSISTANT_LOCK = 0x50_48_05_08
MIGRATION_POLL = 0.1  # seconds between two tries of the migration lock

MIGRATION_1 = """
CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX conversations_by_updated ON conversations (updated_at DESC, id DESC);
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    n BIGINT GENERATED ALWAYS AS IDENTITY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    status TEXT NOT NULL
        CHECK (status IN ('running', 'interrupted', 'completed', 'failed', 'cancelled')),
    error_code TEXT,
    error_message TEXT,
    started_at TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,
    owner_host TEXT,
    owner_pid INTEGER,
    owner_started DOUBLE PRECISION,
    owner_instance TEXT,
    owner_ns BIGINT,
    heartbeat_at TIMESTAMPTZ,
    base_count INTEGER NOT NULL DEFAULT 0,
    "trigger" TEXT NOT NULL DEFAULT 'user',
    cancel_requested_at TIMESTAMPTZ,
    ended_at TIMESTAMPTZ
);
CREATE INDEX runs_by_conversation ON runs (conversation_id, started_at DESC, n DESC);
CREATE UNIQUE INDEX runs_one_running ON runs (conversation_id) WHERE status = 'running';
CREATE INDEX runs_running ON runs (started_at, n) WHERE status = 'running';
CREATE TABLE run_events (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    data JSONB NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE tool_calls (
    key TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    run_id TEXT,
    tool TEXT NOT NULL,
    unsafe BOOLEAN NOT NULL DEFAULT FALSE,
    attempts INTEGER NOT NULL DEFAULT 1,
    started_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX tool_calls_by_conversation ON tool_calls (conversation_id);
CREATE TABLE checkpoint_log (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    step INTEGER NOT NULL,
    source TEXT NOT NULL,
    next TEXT NOT NULL,
    message_count INTEGER NOT NULL,
    last_message TEXT,
    run_id TEXT,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
CREATE TABLE processes (
    instance TEXT PRIMARY KEY,
    lock_key BIGINT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
"""

# The search index (adapters/postgres/search.py): one entry per title and per indexed
# message, its words as a tsvector ('simple': no stemming, no stop words; the words are
# split by Sophos, see search_text.py) under a GIN index; `search_threads` remembers how
# far each thread is indexed. Existing titles and threads are indexed by the checkpointer
# when it starts (search_sync.index_missing): their words are split in Python.
MIGRATION_SEARCH = """
CREATE TABLE search_entries (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    message_index INTEGER,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    words TSVECTOR NOT NULL
);
CREATE INDEX search_entries_by_conversation ON search_entries (conversation_id, message_index);
CREATE INDEX search_entries_words ON search_entries USING gin (words);
CREATE TABLE search_threads (
    conversation_id TEXT PRIMARY KEY,
    raw_count INTEGER NOT NULL,
    next_index INTEGER NOT NULL,
    last_id TEXT
)
"""

# The whole schema history, as on SQLite (adapters/sqlite/database.py); v1 starts at the
# shape SQLite reached at its v4, with `ended_at` (the store's clock when a run finished,
# for event retention) and the registry of live processes (presence.py).
# Tool calls waiting for approval (as on SQLite): a `waiting` status, the requests
# with their decisions (`n` orders those stored in the same instant), and the tools a
# person always allows.
MIGRATION_APPROVALS = """
ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check
    CHECK (status IN ('running', 'interrupted', 'completed', 'failed', 'cancelled', 'waiting'));
CREATE TABLE tool_approvals (
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    call_id TEXT NOT NULL,
    n BIGINT GENERATED ALWAYS AS IDENTITY,
    run_id TEXT,
    name TEXT NOT NULL,
    server TEXT NOT NULL,
    args JSONB NOT NULL,
    description TEXT NOT NULL,
    schema JSONB NOT NULL,
    requested_at TIMESTAMPTZ NOT NULL,
    decision JSONB,
    decided_at TIMESTAMPTZ,
    PRIMARY KEY (conversation_id, call_id)
);
CREATE INDEX tool_approvals_undecided ON tool_approvals (requested_at) WHERE decision IS NULL;
CREATE TABLE tool_allow_rules (
    tool TEXT PRIMARY KEY,
    since TIMESTAMPTZ NOT NULL
)
"""

Setup = Callable[[AsyncConnection[Any]], Awaitable[None]]

# SQL scripts, or a step in Python where SQL cannot do it (each in its own transaction)
MIGRATIONS: tuple[str | Setup, ...] = (
    MIGRATION_1,
    MIGRATION_BRANCHES,
    MIGRATION_SEARCH,
    MIGRATION_APPROVALS,
    MIGRATION_MESSAGES,
    migrate_log_format,
    MIGRATION_SESSIONS,
    MIGRATION_THREAD_METADATA,
    MIGRATION_CHAT_SETTINGS,
    MIGRATION_QUEUE,
    MIGRATION_USERS,
    MIGRATION_OWNER,
    add_rule_owner,
    MIGRATION_FILES,
    MIGRATION_RUN_KWARGS,  # v15
    add_stems,  # v16
    add_organising,  # v17
    MIGRATION_USAGE_AUDIT,
    MIGRATION_STORE,
    MIGRATION_SCHEDULES,
    MIGRATION_TRACES,
    MIGRATION_CRONS,
    MIGRATION_STORE_VECTORS,
    MIGRATION_ASSISTANTS,
    MIGRATION_WEBHOOKS,
    MIGRATION_KNOWLEDGE,
)


def storage_failure(e: Exception) -> StorageFailure:
    """Our public message for a psycopg or pool error (the raw text is logged)."""
    log.warning("storage error: %s: %s", type(e).__name__, str(e).strip())
    return StorageFailure(STORAGE_MESSAGE)


class PostgresDatabase:
    """The pool, opened (and the schema migrated) on first use, inside the event loop
    that uses it. `wait_timeout` is how long a caller waits for a free connection (or for
    a database that is down) before StorageFailure."""

    def __init__(self, url: str, pool_size: int = 10, wait_timeout: float = 5.0) -> None:
        self.url = url
        self.pool_size = pool_size
        self.wait_timeout = wait_timeout
        self.schema_version = 0
        self._pool: AsyncConnectionPool[AsyncConnection[Any]] | None = None
        self._opening: asyncio.Lock | None = None
        self._setups: list[Setup] = []

    def also_migrate(self, setup: Setup) -> None:
        """Run `setup` (the checkpointer's own migrations) under the migration lock, on
        the connection that holds it."""
        self._setups.append(setup)

    async def pool(self) -> AsyncConnectionPool[AsyncConnection[Any]]:
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                self._pool = await self._open()
        return self._pool

    async def _open(self) -> AsyncConnectionPool[AsyncConnection[Any]]:
        pool: AsyncConnectionPool[AsyncConnection[Any]] = AsyncConnectionPool(
            self.url,
            min_size=1,
            max_size=self.pool_size,
            timeout=self.wait_timeout,
            kwargs=connection_options(lock_timeout=self.wait_timeout),
            check=AsyncConnectionPool.check_connection,  # a connection cut by a restart is replaced
            open=False,
            name="sophos",
        )
        try:
            await pool.open(wait=True, timeout=self.wait_timeout)
            async with pool.connection() as conn:
                self.schema_version = await migrate(conn, self._setups)
        except (psycopg.Error, PoolTimeout) as e:
            await pool.close()
            raise storage_failure(e) from e
        except BaseException:
            await pool.close()
            raise
        return pool

    @asynccontextmanager
    async def cursor(self, transaction: bool = False) -> AsyncIterator[AsyncCursor[Any]]:
        """A cursor on a pooled connection: one statement in autocommit, or with
        `transaction` a BEGIN … COMMIT rolled back on any exception."""
        pool = await self.pool()
        try:
            async with pool.connection() as conn:
                if transaction:
                    async with conn.transaction(), conn.cursor() as cur:
                        yield cur
                else:
                    async with conn.cursor() as cur:
                        yield cur
        except (psycopg.Error, PoolTimeout) as e:
            raise storage_failure(e) from e

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None


def connection_options(lock_timeout: float = 0) -> dict[str, Any]:
    # autocommit (the official saver's setup needs it, our writes open transactions), no
    # prepared statements at all (None, not 0, which prepares every statement at once): a
    # transaction-mode PgBouncer works, and PostgreSQL never switches a search to a generic
    # plan (a common word's query went from 4 ms to 500 ms after five runs), UTC timestamps.
    # `lock_timeout` (seconds, 0 = wait for ever): a statement behind another session's lock
    # (a VACUUM FULL, a migration) fails after it, as SQLite's busy timeout does, instead of
    # hanging the request
    options = f"-c timezone=UTC -c lock_timeout={int(lock_timeout * 1000)}"
    return {"autocommit": True, "prepare_threshold": None, "options": options, "connect_timeout": 5}


async def migrate(conn: AsyncConnection[Any], setups: Sequence[Setup] = ()) -> int:
    """Apply our pending migrations and then `setups`, holding the migration lock.

    The lock is polled with pg_try_advisory_lock, never waited on: the official saver's
    setup runs CREATE INDEX CONCURRENTLY, which waits for every open transaction, including
    that of a session blocked in pg_advisory_lock (a deadlock, measured). Every process
    runs the setups (they are idempotent); an up-to-date schema costs two reads."""
    while not await _scalar(conn, "SELECT pg_try_advisory_lock(%s)", (MIGRATION_LOCK,)):
        await asyncio.sleep(MIGRATION_POLL)
    await conn.execute("SET lock_timeout = 0")  # a migration waits for the locks it needs
    try:
        await conn.execute("CREATE TABLE IF NOT EXISTS sophos_migrations (v INTEGER PRIMARY KEY)")
        version = int(await _scalar(conn, "SELECT coalesce(max(v), 0) FROM sophos_migrations"))
        for target in range(version + 1, len(MIGRATIONS) + 1):
            step = MIGRATIONS[target - 1]
            async with conn.transaction():
                if callable(step):
                    await step(conn)
                for statement in (s.strip() for s in step.split(";")) if isinstance(step, str) else ():
                    if statement:  # one by one: the extended protocol takes one statement
                        await conn.execute(statement.encode())
                await conn.execute("INSERT INTO sophos_migrations (v) VALUES (%s)", (target,))
            log.info("applied migration %d", target)
            version = target
        for setup in setups:
            await setup(conn)
        return version
    finally:
        await conn.execute("RESET lock_timeout")
        await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))


async def _scalar(conn: AsyncConnection[Any], sql: str, args: tuple[object, ...] = ()) -> Any:
    cur = await conn.execute(sql, args or None)
    row = await cur.fetchone()
    return row[0] if row else None
