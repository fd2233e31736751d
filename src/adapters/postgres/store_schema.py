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

# The items' embeddings (EMBEDDING_MODEL) as arrays of reals, with the model that made them;
# a query's cosine with each is computed in SQL (adapters/postgres/store.py). Not pgvector's
# `vector` type: the PostgreSQL the tests and the image run is Debian 12's, whose archive has
# no postgresql-15-pgvector (docs/memory.md says how it would change), and an array needs no
# extension a server may lack.
MIGRATION_STORE_VECTORS = """
ALTER TABLE store_items ADD COLUMN IF NOT EXISTS embedding REAL[];
ALTER TABLE store_items ADD COLUMN IF NOT EXISTS embedding_model TEXT
"""
