"""The branches table on PostgreSQL (migration 2; see adapters/postgres/branches.py)."""

MIGRATION_BRANCHES = """
ALTER TABLE checkpoint_log ADD COLUMN branch INTEGER;
CREATE TABLE branches (
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    parent INTEGER,
    fork_index INTEGER NOT NULL,
    active BOOLEAN NOT NULL DEFAULT FALSE,
    head TEXT,
    next TEXT NOT NULL DEFAULT '[]',
    message_count INTEGER NOT NULL DEFAULT 0,
    messages BYTEA,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (conversation_id, number)
);
CREATE UNIQUE INDEX branches_one_active ON branches (conversation_id) WHERE active
"""
