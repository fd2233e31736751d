"""Migration 8: each message of a thread stored once (adapters/langgraph/message_rows.py).
The checkpoints that refer to a row name it by the message's digest; the row goes with its
thread (delete_thread) or with the last checkpoint that refers to it (retention)."""

MIGRATION_MESSAGES = """
CREATE TABLE IF NOT EXISTS checkpoint_messages (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    digest BLOB NOT NULL,
    message BLOB NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, digest)
);
"""
