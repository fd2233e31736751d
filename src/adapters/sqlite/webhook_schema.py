"""The webhooks' tables on the SQLite file (adapters/sqlite/webhooks.py)."""

from __future__ import annotations

import sqlite3

# `run_webhooks`: the URL a run (or the queued message whose run takes its id) names.
# `webhook_deliveries`: the outbox, one row per run outcome with a webhook, kept with no
# foreign key (a deleted conversation's outcome is still told); `claimed_at`: the attempt
# going on (ISO UTC), taken again once older than the lease. `webhook_secrets`: one per user.
TABLES = """
CREATE TABLE IF NOT EXISTS run_webhooks (
    run_id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    url TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS run_webhooks_conversation ON run_webhooks (conversation_id);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    url TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at TEXT NOT NULL,
    claimed_at TEXT,
    last_error TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_at) WHERE state = 'pending';
CREATE TABLE IF NOT EXISTS webhook_secrets (
    owner TEXT PRIMARY KEY,
    secret TEXT NOT NULL
)
"""


def add_webhooks(conn: sqlite3.Connection) -> None:
    for statement in TABLES.split(";"):  # executescript() would commit the migration's transaction
        if statement.strip():
            conn.execute(statement)
    # the schedule's webhook (a column of its own: the crons' and /api/schedules' alike);
    # looked for first, as SQLite has no ADD COLUMN IF NOT EXISTS
    if "webhook" not in {row[1] for row in conn.execute("PRAGMA table_info(schedules)")}:
        conn.execute("ALTER TABLE schedules ADD COLUMN webhook TEXT")
