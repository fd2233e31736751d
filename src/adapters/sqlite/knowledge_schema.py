"""The knowledge collections' tables (issue 45 item 3; see adapters/sqlite/knowledge.py), a
migration appended to database.MIGRATIONS.

`knowledge_collections`: one row per (owner, name). `knowledge_files`: a collection's files,
their sha256 digest (a file put again with the same bytes is not re-indexed), size, type and
passage count; deleted with their collection (ON DELETE CASCADE). `knowledge_chunks`: a
file's passages (lines first..last, text, stems: adapters.storage.knowledge_text), deleted
with their file; `knowledge_fts` indexes the stems (FTS5, external content), the triggers
keep it in step with the rows, cascades included."""

from __future__ import annotations

MIGRATION_KNOWLEDGE = """
CREATE TABLE IF NOT EXISTS knowledge_collections (
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (owner, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS knowledge_files (
    id INTEGER PRIMARY KEY,
    owner TEXT NOT NULL,
    collection TEXT NOT NULL,
    name TEXT NOT NULL,
    digest TEXT NOT NULL,
    size INTEGER NOT NULL,
    media_type TEXT NOT NULL,
    passages INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (owner, collection, name),
    FOREIGN KEY (owner, collection) REFERENCES knowledge_collections (owner, name) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS knowledge_chunks (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES knowledge_files (id) ON DELETE CASCADE,
    first_line INTEGER NOT NULL,
    last_line INTEGER NOT NULL,
    body TEXT NOT NULL,
    stems TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS knowledge_chunks_file ON knowledge_chunks (file_id);
CREATE VIRTUAL TABLE IF NOT EXISTS knowledge_fts USING fts5(
    stems, content='knowledge_chunks', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS knowledge_chunks_ai AFTER INSERT ON knowledge_chunks BEGIN
    INSERT INTO knowledge_fts (rowid, stems) VALUES (new.id, new.stems);
END;
CREATE TRIGGER IF NOT EXISTS knowledge_chunks_ad AFTER DELETE ON knowledge_chunks BEGIN
    INSERT INTO knowledge_fts (knowledge_fts, rowid, stems) VALUES ('delete', old.id, old.stems);
END
"""
