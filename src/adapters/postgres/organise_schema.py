"""Migration 17 (issue 48 items 12, 13): organising many chats and saved chat settings, as
adapters/sqlite/organise_schema.py says: what a conversation's instructions do to the
server's prompt, pins, the archive, temporary chats, who gave the title, turn counts, and
each user's saved settings. Rows written before keep their meaning: their own prompt
replaced the server's, and only the placeholder title may be replaced by the model's.

A step in Python, idempotent as every migration (a database whose migration record was set
back runs it again): each column is added, and the rows before it set, only when the
table lacks it."""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection

from domain.model import NEW_CONVERSATION_TITLE

COLUMNS = (
    ("system_mode", "TEXT NOT NULL DEFAULT 'add'", "UPDATE conversations SET system_mode = 'replace' WHERE system IS NOT NULL"),
    ("pinned", "BOOLEAN NOT NULL DEFAULT FALSE", None),
    ("archived", "BOOLEAN NOT NULL DEFAULT FALSE", None),
    ("temporary", "SMALLINT NOT NULL DEFAULT 0", None),
    ("title_by", "TEXT NOT NULL DEFAULT 'user'", "UPDATE conversations SET title_by = 'message' WHERE title = %s"),
    ("turns", "INTEGER", None),
)

PRESETS = """
CREATE TABLE IF NOT EXISTS chat_presets (
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    model TEXT,
    system TEXT,
    system_mode TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (owner, name)
)
"""


async def add_organising(conn: AsyncConnection[Any]) -> None:
    cur = await conn.execute(
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = 'conversations'"
    )
    have = {str(row[0]) for row in await cur.fetchall()}
    for name, kind, then in COLUMNS:
        if name not in have:
            await conn.execute(f"ALTER TABLE conversations ADD COLUMN {name} {kind}".encode())
            if then is not None:
                await conn.execute(then.encode(), (NEW_CONVERSATION_TITLE,) if "%s" in then else None)
    await conn.execute("CREATE INDEX IF NOT EXISTS conversations_temporary ON conversations (updated_at) WHERE temporary <> 0")
    await conn.execute(PRESETS.encode())
