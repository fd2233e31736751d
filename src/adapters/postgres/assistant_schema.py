"""The assistants' tables on PostgreSQL, as adapters/sqlite/assistant_schema.py says, with
`config`, `context` and `metadata` as jsonb and times as timestamptz."""

from __future__ import annotations

MIGRATION_ASSISTANTS = """
CREATE TABLE IF NOT EXISTS assistants (
    assistant_id TEXT PRIMARY KEY,
    owner TEXT,
    graph_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    config JSONB NOT NULL,
    context JSONB NOT NULL,
    metadata JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS assistants_by_owner ON assistants (owner, graph_id);
CREATE TABLE IF NOT EXISTS assistant_versions (
    assistant_id TEXT NOT NULL REFERENCES assistants(assistant_id) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    graph_id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    config JSONB NOT NULL,
    context JSONB NOT NULL,
    metadata JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (assistant_id, version)
)
"""
