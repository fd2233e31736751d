"""Opening the one SQLite file: pragmas, numbered migrations (PRAGMA user_version), and
the translation of sqlite3 errors into StorageFailure."""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from adapters.sqlite import vectors
from adapters.sqlite.approval_schema import MIGRATION_APPROVALS
from adapters.sqlite.assistant_schema import MIGRATION_ASSISTANTS
from adapters.sqlite.branch_schema import MIGRATION_BRANCHES
from adapters.sqlite.chat_schema import add_chat_settings
from adapters.sqlite.file_rows import MIGRATION_FILES
from adapters.sqlite.knowledge_schema import MIGRATION_KNOWLEDGE
from adapters.sqlite.log_schema import MIGRATION_LOG_FORMAT
from adapters.sqlite.message_schema import MIGRATION_MESSAGES
from adapters.sqlite.metadata_schema import MIGRATION_RUN_KWARGS, MIGRATION_THREAD_METADATA
from adapters.sqlite.organise_schema import add_organising
from adapters.sqlite.queue_schema import MIGRATION_QUEUE
from adapters.sqlite.schedule_schema import MIGRATION_SCHEDULES, add_crons
from adapters.sqlite.search_schema import MIGRATION_SEARCH, add_stems
from adapters.sqlite.session_schema import MIGRATION_SESSIONS
from adapters.sqlite.store_schema import MIGRATION_STORE, add_store_vectors
from adapters.sqlite.threads import SerialThread, release, writer_thread
from adapters.sqlite.trace_schema import add_traces
from adapters.sqlite.usage_schema import add_usage_and_audit
from adapters.sqlite.user_schema import add_owner, add_rule_owner, add_users
from adapters.sqlite.webhook_schema import add_webhooks
from domain.errors import StorageFailure
from ports.metrics import NO_METRICS, MetricsPort

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

BUSY_TIMEOUT_MS = 5000  # the default; servers choose theirs (SqliteRunStore(busy_timeout=…))

# Migration v1 is the reference schema, to the letter (seed-contract 3.2).
MIGRATION_1 = """
CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    status TEXT NOT NULL CHECK (status IN ('running', 'interrupted', 'completed', 'failed')),
    error_code TEXT,
    error_message TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX runs_by_conversation ON runs (conversation_id, started_at);
"""

# v2: owned runs. A `cancelled` status, the owner and heartbeat that recovery checks, and
# a partial unique index so the database (not a dict in one process) allows one running
# run per conversation. SQLite cannot alter a CHECK, so the table is rebuilt.
MIGRATION_2 = """
CREATE TABLE runs_v2 (
    id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    status TEXT NOT NULL
        CHECK (status IN ('running', 'interrupted', 'completed', 'failed', 'cancelled')),
    error_code TEXT,
    error_message TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    owner_host TEXT,
    owner_pid INTEGER,
    owner_started REAL,
    heartbeat_at TEXT
);
INSERT INTO runs_v2 (id, conversation_id, status, error_code, error_message, started_at, finished_at)
    SELECT id, conversation_id, status, error_code, error_message, started_at, finished_at FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v2 RENAME TO runs;
CREATE INDEX runs_by_conversation ON runs (conversation_id, started_at);
CREATE UNIQUE INDEX runs_one_running ON runs (conversation_id) WHERE status = 'running';
CREATE INDEX conversations_by_updated ON conversations (updated_at DESC, id DESC);
"""

# v3: the tool-call journal ("about to call" records), deleted with its conversation.
MIGRATION_3 = """
CREATE TABLE tool_calls (
    key TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    run_id TEXT,
    tool TEXT NOT NULL,
    unsafe INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 1,
    started_at TEXT NOT NULL
);
CREATE INDEX tool_calls_by_conversation ON tool_calls (conversation_id);
"""

# v4: runs owned through the store. The fencing identity and pid namespace of the owner,
# what a run started from (base_count, trigger), cancel requests from any process, and the
# runs' stream events so any process can follow any run (pruned after the run ends).
MIGRATION_4 = """
ALTER TABLE runs ADD COLUMN owner_instance TEXT;
ALTER TABLE runs ADD COLUMN owner_ns INTEGER;
ALTER TABLE runs ADD COLUMN base_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN "trigger" TEXT NOT NULL DEFAULT 'user';
ALTER TABLE runs ADD COLUMN cancel_requested_at TEXT;
CREATE TABLE run_events (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
"""

# a step is SQL, or a function of the connection for what SQL cannot say idempotently
Migration = str | Callable[[sqlite3.Connection], None]
MIGRATIONS: tuple[Migration, ...] = (
    MIGRATION_1,
    MIGRATION_2,
    MIGRATION_3,
    MIGRATION_4,
    MIGRATION_SEARCH,
    MIGRATION_BRANCHES,
    MIGRATION_APPROVALS,
    MIGRATION_MESSAGES,
    MIGRATION_LOG_FORMAT,
    MIGRATION_SESSIONS,
    MIGRATION_THREAD_METADATA,
    add_chat_settings,
    MIGRATION_QUEUE,
    add_users,
    add_owner,
    add_rule_owner,
    MIGRATION_FILES,
    MIGRATION_RUN_KWARGS,  # v18
    add_stems,  # v19
    add_organising,  # v20
    add_usage_and_audit,
    MIGRATION_STORE,
    MIGRATION_SCHEDULES,
    add_traces,
    add_crons,
    add_store_vectors,
    MIGRATION_ASSISTANTS,
    add_webhooks,
    MIGRATION_KNOWLEDGE,
)

BUSY_MESSAGE = "The database is busy: another process holds the write lock; try again"
WRITE_MESSAGE = "The database could not be written (disk full, read-only or I/O error)"
DAMAGED_MESSAGE = "The database file is damaged (not a database, or malformed): restore it from a backup"
GONE_MESSAGE = (
    "The database file was deleted or replaced while this process had it open: writes are "
    "refused, since nothing written now would survive a restart; restore the file and restart"
)
ORPHAN_MESSAGE = (
    "The database file {path} is missing but its -wal/-shm files remain: it was deleted while "
    "a process had it open. Refusing to create a new empty database: stop that process, then "
    "restore the file, or delete the -wal and -shm files to start afresh"
)
_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
_DAMAGED_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def failure_reason(e: Exception) -> str:
    """`busy` when another connection held the lock past the busy timeout, else `error`
    (the storage_failure metric's label)."""
    code = getattr(e, "sqlite_errorcode", None)
    busy = (code is not None and code & 0xFF in _BUSY_CODES) or "locked" in str(e) or "busy" in str(e)
    return "busy" if busy else "error"


def storage_failure(e: sqlite3.Error) -> StorageFailure:
    """Our own public message for a sqlite3 error (the raw text is logged, not shown);
    the caller raises it `from e`."""
    reason = failure_reason(e)
    code = getattr(e, "sqlite_errorcode", None)
    primary = code & 0xFF if code is not None else None
    damaged = primary in _DAMAGED_CODES or "malformed" in str(e) or "not a database" in str(e)
    # INFO: a server logs it (LOG_LEVEL=INFO by default), a CLI shows only its one line
    log.info("storage error: %s (%s)", e, getattr(e, "sqlite_errorname", type(e).__name__))
    return StorageFailure(BUSY_MESSAGE if reason == "busy" else DAMAGED_MESSAGE if damaged else WRITE_MESSAGE)


class FileIdentity:
    """Whether the path still names the file this process opened. A deleted (unlinked)
    or replaced file keeps taking writes through the open descriptors, and every one of
    them is lost at the next start; so writes check first (one stat)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._opened = _identity(path)

    def problem(self) -> str | None:
        """GONE_MESSAGE when the path no longer names the opened file, else None."""
        if self._opened is None or _identity(self.path) == self._opened:
            return None
        return GONE_MESSAGE

    def check(self) -> None:
        """Raise StorageFailure when the path no longer names the opened file."""
        if self.problem() is not None:
            log.error("database %s: the file was deleted or replaced; refusing writes", self.path)
            raise StorageFailure(GONE_MESSAGE)


def _identity(path: str) -> tuple[int, int] | None:
    if path == ":memory:" or path.startswith("file:"):
        return None
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return (-1, -1)
    return st.st_dev, st.st_ino


def integrity_problem(conn: sqlite3.Connection) -> str | None:
    """`PRAGMA quick_check` (every page and index entry read, no cross-checks: a few
    hundred ms on a 50 MB file): None when the file is sound, else our message (the
    details go to the log)."""
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as e:
        log.error("database integrity check failed: %s", e)
        return DAMAGED_MESSAGE
    if [r[0] for r in rows] == ["ok"]:
        return None
    log.error("database integrity check: %s", "; ".join(str(r[0]) for r in rows[:10]))
    return DAMAGED_MESSAGE


def connect(path: str, busy_timeout: float = BUSY_TIMEOUT_MS / 1000) -> sqlite3.Connection:
    """Open a connection with the pragmas every connection to the file needs.

    `path` may be a `file:` URI (e.g. `file:/x/sophos.db?mode=ro`); `busy_timeout` is how
    long, in seconds, a write waits for another connection's write lock. A missing file
    whose -wal or -shm remain is not recreated (StorageFailure): it was deleted under a
    process that may still write to it."""
    uri = path.startswith("file:")
    try:
        if path != ":memory:" and not uri:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            if not os.path.exists(path) and any(os.path.exists(path + s) for s in ("-wal", "-shm")):
                raise StorageFailure(ORPHAN_MESSAGE.format(path=path))
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=busy_timeout, uri=uri)
    except (OSError, sqlite3.OperationalError) as e:  # a path that cannot be: say which, and where it is set
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise StorageFailure(f"Cannot open the database {path}: {reason} (set DATABASE_PATH or --db)") from e
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA foreign_keys = ON")
    vectors.install(conn)
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE … COMMIT, rolled back on any exception."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextmanager
def unsynced(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Commit without an fsync (synchronous=NORMAL) inside, then restore the connection's
    own level. WAL frames are ordered: the next synced commit on the file, from any
    connection, makes these durable too; a process crash loses nothing, a power cut before
    that next synced commit may lose them (never corrupts the file)."""
    (level,) = conn.execute("PRAGMA synchronous").fetchone()
    conn.execute("PRAGMA synchronous = NORMAL")
    try:
        yield conn
    finally:
        conn.execute(f"PRAGMA synchronous = {int(level)}")


def migrate(conn: sqlite3.Connection) -> int:
    """Apply the pending migrations, each in one transaction; return the new version.

    Two processes opening a new file at once are serialised by BEGIN IMMEDIATE, and the
    version is re-read inside the transaction so no migration runs twice. An up-to-date
    file is not written at all (so it opens read-only too).
    """
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    if version >= len(MIGRATIONS):
        return int(version)
    for target in range(1, len(MIGRATIONS) + 1):
        with transaction(conn):
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            if version >= target:
                continue
            step = MIGRATIONS[target - 1]
            if callable(step):
                step(conn)
            for statement in _statements(step) if isinstance(step, str) else ():
                conn.execute(statement)
            if isinstance(step, str) and "writable_schema" in step:  # schema text edited in place
                (cookie,) = conn.execute("PRAGMA schema_version").fetchone()
                conn.execute(f"PRAGMA schema_version = {int(cookie) + 1}")
            conn.execute(f"PRAGMA user_version = {target}")
            log.info("applied migration %d", target)
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    return int(version)


def _statements(script: str) -> list[str]:
    # executescript() would commit the open transaction first; run statements one by one
    # (a trigger's body has semicolons: a statement ends where SQLite says it is complete).
    out, pending = [], ""
    for part in script.split(";"):
        pending += part + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                out.append(pending.strip())
            pending = ""
    return out


class Worker:
    """One connection and the one thread that uses it.

    Every call runs on that thread, never on the event loop, in submission order, so the
    calls on one connection are serialised without a lock and never occupy the loop's
    default executor. sqlite3 errors leave as StorageFailure (raw text logged)."""

    def __init__(
        self,
        name: str,
        open_connection: Callable[[], sqlite3.Connection],
        metrics: MetricsPort = NO_METRICS,
        before: Callable[[], None] | None = None,
        shared_path: str | None = None,
        busy_timeout: float | None = None,
    ) -> None:
        self.metrics = metrics
        # the connection's busy timeout, as a deadline from each call's submission: a call
        # queued behind another that waits for the lock waits out the rest only, not a
        # whole timeout of its own again (a request answered 503 after two waits)
        self._busy_timeout = busy_timeout
        # shared_path: run on the file's one writer thread (adapters.sqlite.threads)
        self._shared = shared_path
        if shared_path is not None:
            self._pool = writer_thread(shared_path)
        else:
            self._pool = SerialThread(f"sophos-sqlite-{name}")
        self._closed = False
        self._before = before  # run before every call of `run` (the writer: FileIdentity.check)
        try:
            self._conn = self._pool.submit(self._guarded, open_connection).result()
        except BaseException:
            self._release(wait=False)
            raise

    def _release(self, wait: bool) -> None:
        if self._shared is not None:
            release(self._shared, self._pool, wait=wait)
        else:
            self._pool.shutdown(wait=wait)

    def call(self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run `fn(connection, …)` on the worker's thread and wait for it (blocking: for
        opening and closing, outside the event loop)."""
        return self._pool.submit(self._guarded, partial(fn, self._conn, *args, **kwargs)).result()

    async def run(self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run `fn(connection, …)` on the worker's thread; the loop goes on meanwhile.

        A cancelled caller does not stop a call already started: it completes (or rolls
        back) on its thread, as a write sent to a network database would."""
        call = partial(fn, self._conn, *args, **kwargs)
        if self._before is not None:
            call = partial(_after, self._before, call)
        if self._busy_timeout is not None:
            call = partial(within, self._conn, time.monotonic() + self._busy_timeout, self._busy_timeout, call)
        try:
            pending = self._pool.run(self._guarded, call)
        except RuntimeError as e:  # the thread is shut down: the store was closed
            raise StorageFailure("The database is closed") from e
        return await pending

    def close(self) -> None:
        """Finish the calls already submitted, then close the connection and the thread."""
        if self._closed:
            return
        self._closed = True
        closing = self._pool.submit(self._conn.close)
        with suppress(sqlite3.Error):
            closing.result()
        self._release(wait=True)

    def _guarded(self, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except sqlite3.Error as e:
            self.metrics.storage_failure(failure_reason(e))
            raise storage_failure(e) from e


QUEUE_SLACK = 0.05  # seconds a call may wait its turn before its busy timeout is shortened


def within(conn: sqlite3.Connection, deadline: float, full: float, fn: Callable[[], T]) -> T:
    """`fn()` with the connection's busy timeout cut to what is left before `deadline`;
    past it, a busy error at once (the call waited its turn that long already)."""
    left = deadline - time.monotonic()
    if left <= 0.001:
        raise sqlite3.OperationalError("database is locked (the wait for the lock went past the busy timeout)")
    if left >= full - QUEUE_SLACK:  # barely queued (the usual case): the connection's own timeout
        return fn()
    conn.execute(f"PRAGMA busy_timeout = {int(left * 1000)}")
    try:
        return fn()
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(full * 1000)}")


def _after(check: Callable[[], None], fn: Callable[[], T]) -> T:
    check()
    return fn()
