"""The users and their API tokens (adapters/postgres/users.py), and the principal a login
session acts as (issue 31). `name_key` is the name lower case: names are unique whatever
their case. A token is stored as its SHA-256, never itself. Sessions stored before this
migration were made with API_TOKEN: the bootstrap admin's."""

from typing import Any

from psycopg import AsyncConnection

MIGRATION_USERS = """
CREATE TABLE IF NOT EXISTS users (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL CHECK (role IN ('admin', 'user')),
    disabled BOOLEAN NOT NULL DEFAULT false,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE IF NOT EXISTS api_tokens (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    hash TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    last_used_at TIMESTAMPTZ,
    revoked_at TIMESTAMPTZ
);
CREATE INDEX IF NOT EXISTS api_tokens_user ON api_tokens (user_id);
ALTER TABLE login_sessions ADD COLUMN IF NOT EXISTS principal TEXT NOT NULL DEFAULT 'admin';
CREATE INDEX IF NOT EXISTS login_sessions_principal ON login_sessions (principal)
"""

# every conversation gets an owner; those written before were the bootstrap admin's
MIGRATION_OWNER = """
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS owner TEXT NOT NULL DEFAULT 'admin';
CREATE INDEX IF NOT EXISTS conversations_owner ON conversations (owner, updated_at)
"""


async def add_rule_owner(conn: AsyncConnection[Any]) -> None:
    """ "Always allow" rules become per user: (owner, tool) is the key; the rules so far were
    the bootstrap admin's. A step in Python: whether the key changed already is a question."""
    await conn.execute("ALTER TABLE tool_allow_rules ADD COLUMN IF NOT EXISTS owner TEXT NOT NULL DEFAULT 'admin'")
    cur = await conn.execute("SELECT 1 FROM pg_constraint WHERE conname = 'tool_allow_rules_owner_pkey'")
    if await cur.fetchone() is None:
        await conn.execute("ALTER TABLE tool_allow_rules DROP CONSTRAINT IF EXISTS tool_allow_rules_pkey")
        await conn.execute("ALTER TABLE tool_allow_rules ADD CONSTRAINT tool_allow_rules_owner_pkey PRIMARY KEY (owner, tool)")
