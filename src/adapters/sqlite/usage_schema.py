"""The usage rows (one per user, model and UTC day: adapters/sqlite/usage.py) and the audit
log (append-only, numbered by its rowid, which AUTOINCREMENT never reuses). Days are ISO
dates, times Unix seconds (REAL)."""

from __future__ import annotations

import sqlite3

TABLES = """
CREATE TABLE IF NOT EXISTS usage_days (
    owner TEXT NOT NULL,
    model TEXT NOT NULL,
    day TEXT NOT NULL,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    model_seconds REAL NOT NULL DEFAULT 0,
    tool_seconds REAL NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0,
    estimated_calls INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (owner, day, model)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS usage_days_day ON usage_days (day);
CREATE TABLE IF NOT EXISTS audit_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    origin TEXT NOT NULL,
    target TEXT NOT NULL DEFAULT '',
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS audit_log_at ON audit_log (at);
"""


def add_usage_and_audit(conn: sqlite3.Connection) -> None:
    for statement in TABLES.split(";"):  # executescript() would commit the migration's transaction
        if statement.strip():
            conn.execute(statement)
