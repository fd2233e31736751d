"""The assistants' tables (adapters/sqlite/assistants.py), a migration appended to
database.MIGRATIONS. `assistants`: one row per assistant, its latest version's fields
(`owner` NULL: a graph's start-up assistant, everyone's); `assistant_versions`: every version,
deleted with the assistant. `config`, `context` and `metadata` are JSON texts; times ISO UTC."""

from __future__ import annotations

MIGRATION_ASSISTANTS = """
CREATE TABLE IF NOT EXISTS assistants (
    assistant_id TEXT PRIMARY KEY,
    owner TEXT,
    graph_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    config TEXT NOT NULL,
    context TEXT NOT NULL,
    metadata TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS assistants_by_owner ON assistants (owner, graph_id);
CREATE TABLE IF NOT EXISTS assistant_versions (
    assistant_id TEXT NOT NULL REFERENCES assistants(assistant_id) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    graph_id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    config TEXT NOT NULL,
    context TEXT NOT NULL,
    metadata TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (assistant_id, version)
) WITHOUT ROWID;
"""
