"""The knowledge collections' tables on PostgreSQL (issue 45 item 3), as
adapters/sqlite/knowledge_schema.py says: collections, their files (deleted with them) and
the files' passages (deleted with their file), each passage's stems a tsvector under a GIN
index."""

from __future__ import annotations

MIGRATION_KNOWLEDGE = """
CREATE TABLE IF NOT EXISTS knowledge_collections (
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (owner, name)
);
CREATE TABLE IF NOT EXISTS knowledge_files (
    id BIGSERIAL PRIMARY KEY,
    owner TEXT NOT NULL,
    collection TEXT NOT NULL,
    name TEXT NOT NULL,
    digest TEXT NOT NULL,
    size BIGINT NOT NULL,
    media_type TEXT NOT NULL,
    passages INTEGER NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    UNIQUE (owner, collection, name),
    FOREIGN KEY (owner, collection) REFERENCES knowledge_collections (owner, name) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS knowledge_chunks (
    id BIGSERIAL PRIMARY KEY,
    file_id BIGINT NOT NULL REFERENCES knowledge_files (id) ON DELETE CASCADE,
    first_line INTEGER NOT NULL,
    last_line INTEGER NOT NULL,
    body TEXT NOT NULL,
    stems TSVECTOR NOT NULL
);
CREATE INDEX IF NOT EXISTS knowledge_chunks_file ON knowledge_chunks (file_id);
CREATE INDEX IF NOT EXISTS knowledge_chunks_stems ON knowledge_chunks USING GIN (stems)
"""
