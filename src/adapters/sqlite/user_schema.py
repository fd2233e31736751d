"""The users and their API tokens (adapters/sqlite/users.py), and the principal a login
session acts as (issue 31). `name_key` is the name lower case: names are unique whatever
their case. A token is stored as its SHA-256, never itself. Times are Unix seconds (REAL).
Sessions stored before this migration were made with API_TOKEN: the bootstrap admin's.

The owner migration gives every conversation an owner; those written before it were
the one person's who had the server, the bootstrap admin's."""

from __future__ import annotations

import sqlite3

TABLES = """
CREATE TABLE IF NOT EXISTS users (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL CHECK (role IN ('admin', 'user')),
    disabled INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS api_tokens (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    hash TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL,
    created_at REAL NOT NULL,
    last_used_at REAL,
    revoked_at REAL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS api_tokens_user ON api_tokens (user_id);
"""


def add_users(conn: sqlite3.Connection) -> None:
    for statement in TABLES.split(";"):  # executescript() would commit the migration's transaction
        if statement.strip():
            conn.execute(statement)
    have = {row[1] for row in conn.execute("PRAGMA table_info(login_sessions)")}
    if "principal" not in have:  # SQLite has no ADD COLUMN IF NOT EXISTS
        conn.execute("ALTER TABLE login_sessions ADD COLUMN principal TEXT NOT NULL DEFAULT 'admin'")
    conn.execute("CREATE INDEX IF NOT EXISTS login_sessions_principal ON login_sessions (principal)")


def add_owner(conn: sqlite3.Connection) -> None:
    have = {row[1] for row in conn.execute("PRAGMA table_info(conversations)")}
    if "owner" not in have:
        conn.execute("ALTER TABLE conversations ADD COLUMN owner TEXT NOT NULL DEFAULT 'admin'")
    conn.execute("CREATE INDEX IF NOT EXISTS conversations_owner ON conversations (owner, updated_at)")


def add_rule_owner(conn: sqlite3.Connection) -> None:
    """ "Always allow" rules become per user: (owner, tool) is the key, so SQLite rebuilds the
    table (it cannot change a primary key); the rules so far were the bootstrap admin's."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(tool_allow_rules)")}
    if "owner" in have:
        return
    conn.execute(
        "CREATE TABLE tool_allow_rules_by_owner (owner TEXT NOT NULL DEFAULT 'admin', tool TEXT NOT NULL, "
        "since TEXT NOT NULL, PRIMARY KEY (owner, tool))"
    )
    conn.execute("INSERT INTO tool_allow_rules_by_owner (owner, tool, since) SELECT 'admin', tool, since FROM tool_allow_rules")
    conn.execute("DROP TABLE tool_allow_rules")
    conn.execute("ALTER TABLE tool_allow_rules_by_owner RENAME TO tool_allow_rules")
