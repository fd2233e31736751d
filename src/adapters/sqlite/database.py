"""Opening the one SQLite file: pragmas and numbered migrations (PRAGMA user_version)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5000

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

MIGRATIONS: tuple[str, ...] = (MIGRATION_1, MIGRATION_2, MIGRATION_3)


def connect(path: str) -> sqlite3.Connection:
    """Open a connection with the pragmas every connection to the file needs."""
    if path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA foreign_keys = ON")
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


def migrate(conn: sqlite3.Connection) -> int:
    """Apply the pending migrations, each in one transaction; return the new version.

    Two processes opening a new file at once are serialised by BEGIN IMMEDIATE, and the
    version is re-read inside the transaction so no migration runs twice.
    """
    for target in range(1, len(MIGRATIONS) + 1):
        with transaction(conn):
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            if version >= target:
                continue
            for statement in _statements(MIGRATIONS[target - 1]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {target}")
            log.info("applied migration %d", target)
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    return int(version)


def _statements(script: str) -> list[str]:
    # executescript() would commit the open transaction first; run statements one by one.
    return [s.strip() for s in script.split(";") if s.strip()]
