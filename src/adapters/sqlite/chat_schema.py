"""Migration 11: a conversation's own model and system prompt (issue 32).

NULL is the server's default (OLLAMA_MODEL or OPENAI_MODEL, config/system.md), so rows
written before this migration mean what they always meant. SQLite has no ADD COLUMN IF NOT
EXISTS, and a migration must be idempotent (a file whose user_version was set back runs it
again): the columns are added when the table lacks them."""

from __future__ import annotations

import sqlite3

COLUMNS = (("model", "TEXT"), ("system", "TEXT"))


def add_chat_settings(conn: sqlite3.Connection) -> None:
    have = {row[1] for row in conn.execute("PRAGMA table_info(conversations)")}
    for name, kind in COLUMNS:
        if name not in have:
            conn.execute(f"ALTER TABLE conversations ADD COLUMN {name} {kind}")
