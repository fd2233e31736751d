"""The store's table (issue 45; see adapters/sqlite/store.py), a migration appended to
database.MIGRATIONS.

`store_items`: one row per (owner, namespace, key); `namespace` is domain.store.namespace_key
(labels each followed by a period, so a prefix is a range of the text); `value` the item's
JSON; `stems` the words it is found by (adapters.storage.store_text; NULL: not indexed);
`ttl_minutes` and `expires_at` its time to live (NULL: none). `store_fts` indexes `stems`
(FTS5, external content): the triggers keep it in step, and a put is an upsert (an UPDATE,
whose trigger fires; REPLACE would delete without firing the delete trigger)."""

from __future__ import annotations

import sqlite3

MIGRATION_STORE = """
CREATE TABLE IF NOT EXISTS store_items (
    owner TEXT NOT NULL,
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    stems TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    ttl_minutes REAL,
    expires_at TEXT,
    UNIQUE (owner, namespace, key)
);
CREATE INDEX IF NOT EXISTS store_items_expiry ON store_items (expires_at) WHERE expires_at IS NOT NULL;
CREATE VIRTUAL TABLE IF NOT EXISTS store_fts USING fts5(
    stems, content='store_items', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS store_items_ai AFTER INSERT ON store_items WHEN new.stems IS NOT NULL BEGIN
    INSERT INTO store_fts (rowid, stems) VALUES (new.rowid, new.stems);
END;
CREATE TRIGGER IF NOT EXISTS store_items_ad AFTER DELETE ON store_items WHEN old.stems IS NOT NULL BEGIN
    INSERT INTO store_fts (store_fts, rowid, stems) VALUES ('delete', old.rowid, old.stems);
END;
CREATE TRIGGER IF NOT EXISTS store_items_au AFTER UPDATE OF stems ON store_items BEGIN
    INSERT INTO store_fts (store_fts, rowid, stems) SELECT 'delete', old.rowid, old.stems WHERE old.stems IS NOT NULL;
    INSERT INTO store_fts (rowid, stems) SELECT new.rowid, new.stems WHERE new.stems IS NOT NULL;
END
"""


def add_store_vectors(conn: sqlite3.Connection) -> None:
    """The items' embeddings (EMBEDDING_MODEL): `embedding` a BLOB of float32s
    (adapters/sqlite/vectors.py; NULL: none), `embedding_model` the model that made it (a
    query's vector is compared only with its own model's, of its own width). Idempotent."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(store_items)")}
    for column, kind in (("embedding", "BLOB"), ("embedding_model", "TEXT")):
        if column not in have:
            conn.execute(f"ALTER TABLE store_items ADD COLUMN {column} {kind}")
