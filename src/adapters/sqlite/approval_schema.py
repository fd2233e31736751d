"""The tool-approval tables on the SQLite file (v7 in database.MIGRATIONS)."""

from __future__ import annotations

# Tool calls waiting for approval: a `waiting` status, the requests with their decisions,
# and the tools a person always allows. SQLite cannot alter a CHECK, and rebuilding `runs`
# would have to name every column other migrations add; a CHECK is not part of the file's
# format, so its text is edited in place (SQLite's documented writable_schema procedure;
# `migrate` then bumps the schema cookie so every connection re-reads it).
MIGRATION_APPROVALS = """
PRAGMA writable_schema = ON;
UPDATE sqlite_master SET sql = replace(sql, '''cancelled'')', '''cancelled'', ''waiting'')')
    WHERE type = 'table' AND name = 'runs' AND sql NOT LIKE '%''waiting''%';
PRAGMA writable_schema = OFF;
CREATE TABLE IF NOT EXISTS tool_approvals (
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    call_id TEXT NOT NULL,
    run_id TEXT,
    name TEXT NOT NULL,
    server TEXT NOT NULL,
    args TEXT NOT NULL,
    description TEXT NOT NULL,
    schema TEXT NOT NULL,
    requested_at TEXT NOT NULL,
    decision TEXT,
    decided_at TEXT,
    PRIMARY KEY (conversation_id, call_id)
);
CREATE INDEX IF NOT EXISTS tool_approvals_undecided ON tool_approvals (requested_at) WHERE decision IS NULL;
CREATE TABLE IF NOT EXISTS tool_allow_rules (
    tool TEXT PRIMARY KEY,
    since TEXT NOT NULL
);
"""
