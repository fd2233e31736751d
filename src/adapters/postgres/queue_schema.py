"""The message queue's table (adapters/postgres/queue.py), as on SQLite
(adapters/sqlite/queue_schema.py)."""

MIGRATION_QUEUE = """
CREATE TABLE IF NOT EXISTS queued_messages (
    id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    body TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'started')),
    run_id TEXT,
    steer BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX IF NOT EXISTS queued_messages_by_conversation ON queued_messages (conversation_id, position);
CREATE UNIQUE INDEX IF NOT EXISTS queued_messages_by_run ON queued_messages (run_id) WHERE run_id IS NOT NULL
"""
