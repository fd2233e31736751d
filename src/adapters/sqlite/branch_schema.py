"""The branches table (migration 6; see adapters/sqlite/branches.py)."""

# checkpoint_log is the checkpointer's own table (created when it opens the file); it may
# not exist yet when the run store migrates first, so v6 creates it too.
CHECKPOINT_LOG = """
CREATE TABLE IF NOT EXISTS checkpoint_log (
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
)
"""

MIGRATION_BRANCHES = (
    CHECKPOINT_LOG.strip()
    + """;
ALTER TABLE checkpoint_log ADD COLUMN branch INTEGER;
CREATE TABLE branches (
    conversation_id TEXT NOT NULL,
    number INTEGER NOT NULL,
    parent INTEGER,
    fork_index INTEGER NOT NULL,
    active INTEGER NOT NULL DEFAULT 0,
    head TEXT,
    next TEXT NOT NULL DEFAULT '[]',
    message_count INTEGER NOT NULL DEFAULT 0,
    messages BLOB,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (conversation_id, number)
);
CREATE UNIQUE INDEX branches_one_active ON branches (conversation_id) WHERE active = 1;
CREATE TRIGGER conversations_branches_ad AFTER DELETE ON conversations BEGIN
    DELETE FROM branches WHERE conversation_id = old.id;
END
"""
)
