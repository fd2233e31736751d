"""The store's table on PostgreSQL (issue 45), as adapters/sqlite/store_schema.py says:
one row per (owner, namespace, key), the namespace as domain.store.namespace_key in the "C"
collation (so a prefix is a range), the value's JSON text as given, its stems as a tsvector
under a GIN index (NULL: not indexed), and its time to live."""

from __future__ import annotations

MIGRATION_STORE = """
CREATE TABLE IF NOT EXISTS store_items (
    owner TEXT NOT NULL,
    namespace TEXT COLLATE "C" NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    stems TSVECTOR,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    ttl_minutes DOUBLE PRECISION,
    expires_at TIMESTAMPTZ,
    PRIMARY KEY (owner, namespace, key)
);
CREATE INDEX IF NOT EXISTS store_items_stems ON store_items USING GIN (stems);
CREATE INDEX IF NOT EXISTS store_items_expiry ON store_items (expires_at) WHERE expires_at IS NOT NULL
"""
