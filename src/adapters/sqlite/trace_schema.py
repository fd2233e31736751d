"""The trace spans (adapters/sqlite/traces.py): one row per span, recorded before the work it
describes starts, ended when it ends, acknowledged once a receiver has it. Times are Unix
nanoseconds (INTEGER); `attributes` is a JSON object; `claimed_until` (Unix seconds) leases a
row to the process shipping it. Kept with no foreign key: a span outlives nothing it names
(a deleted conversation's spans are still shipped, then pruned with the acknowledged ones)."""

from __future__ import annotations

import sqlite3

TABLES = """
CREATE TABLE IF NOT EXISTS trace_spans (
    span_id TEXT PRIMARY KEY,
    trace_id TEXT NOT NULL,
    parent_id TEXT,
    conversation_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    started INTEGER NOT NULL,
    ended INTEGER,
    status TEXT NOT NULL DEFAULT 'unset',
    attributes TEXT NOT NULL DEFAULT '{}',
    acked INTEGER NOT NULL DEFAULT 0,
    claimed_until REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS trace_spans_unacked ON trace_spans (claimed_until) WHERE acked = 0;
CREATE INDEX IF NOT EXISTS trace_spans_runs ON trace_spans (conversation_id, started) WHERE kind = 'agent'
"""


def add_traces(conn: sqlite3.Connection) -> None:
    for statement in TABLES.split(";"):  # executescript() would commit the migration's transaction
        if statement.strip():
            conn.execute(statement)
