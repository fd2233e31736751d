"""The search index's tables (migrations 5 and 19; see adapters/sqlite/search.py)."""

from __future__ import annotations

import sqlite3

from adapters.search_text import stem_text

# v5 in database.MIGRATIONS. Messages of existing threads are indexed by the checkpointer
# when it opens the file (`index_missing`): their checkpoints need LangGraph to decode.
MIGRATION_SEARCH = """
CREATE TABLE search_entries (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    message_index INTEGER,
    role TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX search_entries_by_conversation ON search_entries (conversation_id, message_index);
CREATE VIRTUAL TABLE search_fts USING fts5(
    body, content='search_entries', content_rowid='id', tokenize='unicode61 remove_diacritics 2',
    prefix='2 3'
);
CREATE TRIGGER search_entries_ai AFTER INSERT ON search_entries BEGIN
    INSERT INTO search_fts (rowid, body) VALUES (new.id, new.body);
END;
CREATE TRIGGER search_entries_ad AFTER DELETE ON search_entries BEGIN
    INSERT INTO search_fts (search_fts, rowid, body) VALUES ('delete', old.id, old.body);
END;
CREATE TRIGGER search_entries_au AFTER UPDATE OF body ON search_entries BEGIN
    INSERT INTO search_fts (search_fts, rowid, body) VALUES ('delete', old.id, old.body);
    INSERT INTO search_fts (rowid, body) VALUES (new.id, new.body);
END;
CREATE TABLE search_threads (
    conversation_id TEXT PRIMARY KEY,
    raw_count INTEGER NOT NULL,
    next_index INTEGER NOT NULL,
    last_id TEXT
);
CREATE TRIGGER conversations_search_ai AFTER INSERT ON conversations BEGIN
    INSERT INTO search_entries (conversation_id, message_index, role, body) VALUES (new.id, NULL, 'title', new.title);
END;
CREATE TRIGGER conversations_search_au AFTER UPDATE OF title ON conversations BEGIN
    UPDATE search_entries SET body = new.title WHERE conversation_id = new.id AND message_index IS NULL;
END;
CREATE TRIGGER conversations_search_ad AFTER DELETE ON conversations BEGIN
    DELETE FROM search_entries WHERE conversation_id = old.id;
    DELETE FROM search_threads WHERE conversation_id = old.id;
END;
INSERT INTO search_entries (conversation_id, message_index, role, body)
    SELECT id, NULL, 'title', title FROM conversations
"""


# v19: each entry's stems beside its text (`stems`: its words' distinct stems, see
# adapters.search_text; NULL until Python has stemmed it: a title written by the trigger,
# which the run store stems in the same transaction), and an FTS5 index of both columns.
STEMMED_FTS = (
    """CREATE VIRTUAL TABLE search_fts USING fts5(
        body, stems, content='search_entries', content_rowid='id', tokenize='unicode61 remove_diacritics 2',
        prefix='2 3'
    )""",
    """CREATE TRIGGER search_entries_ai AFTER INSERT ON search_entries BEGIN
        INSERT INTO search_fts (rowid, body, stems) VALUES (new.id, new.body, new.stems);
    END""",
    """CREATE TRIGGER search_entries_ad AFTER DELETE ON search_entries BEGIN
        INSERT INTO search_fts (search_fts, rowid, body, stems) VALUES ('delete', old.id, old.body, old.stems);
    END""",
    """CREATE TRIGGER search_entries_au AFTER UPDATE OF body, stems ON search_entries BEGIN
        INSERT INTO search_fts (search_fts, rowid, body, stems) VALUES ('delete', old.id, old.body, old.stems);
        INSERT INTO search_fts (rowid, body, stems) VALUES (new.id, new.body, new.stems);
    END""",
    """CREATE TRIGGER conversations_search_au AFTER UPDATE OF title ON conversations BEGIN
        UPDATE search_entries SET body = new.title, stems = NULL WHERE conversation_id = new.id AND message_index IS NULL;
    END""",
    "CREATE INDEX search_entries_unstemmed ON search_entries (id) WHERE stems IS NULL",
    "INSERT INTO search_fts (search_fts) VALUES ('rebuild')",
)
OLD_FTS = ("search_entries_ai", "search_entries_ad", "search_entries_au", "conversations_search_au")


def stem_pending(cur: sqlite3.Cursor, conversation_id: str | None = None) -> int:
    """Stem the entries written without stems (of one conversation, or all, a batch at a
    time); returns how many."""
    mine = "" if conversation_id is None else " AND conversation_id = ?"
    last, done = 0, 0
    while rows := cur.execute(
        f"SELECT id, body FROM search_entries WHERE stems IS NULL AND id > ?{mine} ORDER BY id LIMIT 1000",
        (last,) if conversation_id is None else (last, conversation_id),
    ).fetchall():
        cur.executemany("UPDATE search_entries SET stems = ? WHERE id = ?", [(stem_text(body), i) for i, body in rows])
        last, done = rows[-1][0], done + len(rows)
    return done


def stem_title(cur: sqlite3.Cursor, conversation_id: str) -> None:
    """In the transaction that creates or renames the conversation (whose trigger wrote
    the title's entry): the title's stems."""
    stem_pending(cur, conversation_id)


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def add_stems(conn: sqlite3.Connection) -> None:
    """Migration 19 (in its transaction): stem every entry, then index text and stems.
    Idempotent, as every later migration (a file whose version was set back)."""
    if "stems" not in _columns(conn, "search_entries"):
        conn.execute("ALTER TABLE search_entries ADD COLUMN stems TEXT")
    stem_pending(conn.cursor())  # the old index ignores stems; the new one (set back) takes them
    if "stems" in _columns(conn, "search_fts"):
        return
    for trigger in OLD_FTS:
        conn.execute(f"DROP TRIGGER {trigger}")
    conn.execute("DROP TABLE search_fts")
    for statement in STEMMED_FTS:
        conn.execute(statement)
