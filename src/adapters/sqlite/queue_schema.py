"""The message queue's table (adapters/sqlite/queue.py): messages typed while a run works,
deleted with their conversation. `state` 'started' with `run_id`: the run that took the
message in, until its outcome deletes the row (or puts it back, when the message never
reached the thread). `steer`: sent with multitask interrupt, first in line; the active run
hands over at its next step boundary."""

MIGRATION_QUEUE = """
CREATE TABLE IF NOT EXISTS queued_messages (
    id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'started')),
    run_id TEXT,
    steer INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS queued_messages_by_conversation ON queued_messages (conversation_id, position);
CREATE UNIQUE INDEX IF NOT EXISTS queued_messages_by_run ON queued_messages (run_id) WHERE run_id IS NOT NULL;
"""
