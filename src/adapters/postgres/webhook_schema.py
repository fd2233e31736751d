"""The webhooks' tables (adapters/postgres/webhooks.py), as on SQLite
(adapters/sqlite/webhook_schema.py)."""

MIGRATION_WEBHOOKS = """
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
    next_at TIMESTAMPTZ NOT NULL,
    claimed_at TIMESTAMPTZ,
    last_error TEXT,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_at) WHERE state = 'pending';
CREATE TABLE IF NOT EXISTS webhook_secrets (
    owner TEXT PRIMARY KEY,
    secret TEXT NOT NULL
);
ALTER TABLE schedules ADD COLUMN IF NOT EXISTS webhook TEXT
"""
