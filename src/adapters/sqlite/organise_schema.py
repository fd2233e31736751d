"""Migration 20 (issue 48 items 12, 13): organising many chats and saved chat settings.

On `conversations`: `system_mode` (what its instructions do to config/system.md: 'add' or
'replace'), `pinned`, `archived`, `temporary` (0 kept, 1 temporary, 2 temporary and left by
its page: deleted once no run of it is going), `title_by` (who gave the title: 'message',
'model' or 'user') and `turns` (its user messages; NULL: not counted yet). Rows written
before keep their meaning: a conversation's own prompt replaced the server's, so those rows
are 'replace'; a title may have been a person's, so only the placeholder title is
'message' (the model may title it after its next answer).

`chat_presets`: each user's saved settings by name, the default named '' (domain.presets).

SQLite has no ADD COLUMN IF NOT EXISTS, and a migration must be idempotent (a file whose
user_version was set back runs it again): the columns are added when the table lacks them,
and the rows written before are set only then."""

from __future__ import annotations

import sqlite3

from domain.model import NEW_CONVERSATION_TITLE

COLUMNS = (
    ("system_mode", "TEXT NOT NULL DEFAULT 'add'", "UPDATE conversations SET system_mode = 'replace' WHERE system IS NOT NULL"),
    ("pinned", "INTEGER NOT NULL DEFAULT 0", None),
    ("archived", "INTEGER NOT NULL DEFAULT 0", None),
    ("temporary", "INTEGER NOT NULL DEFAULT 0", None),
    ("title_by", "TEXT NOT NULL DEFAULT 'user'", "UPDATE conversations SET title_by = 'message' WHERE title = ?"),
    ("turns", "INTEGER", None),
)

PRESETS = """
CREATE TABLE IF NOT EXISTS chat_presets (
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    model TEXT,
    system TEXT,
    system_mode TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (owner, name)
) WITHOUT ROWID
"""


def add_organising(conn: sqlite3.Connection) -> None:
    have = {row[1] for row in conn.execute("PRAGMA table_info(conversations)")}
    for name, kind, then in COLUMNS:
        if name not in have:
            conn.execute(f"ALTER TABLE conversations ADD COLUMN {name} {kind}")
            if then is not None:
                conn.execute(then, (NEW_CONVERSATION_TITLE,) if "?" in then else ())
    conn.execute("CREATE INDEX IF NOT EXISTS conversations_temporary ON conversations (updated_at) WHERE temporary <> 0")
    conn.execute(PRESETS)
