"""The schedules' tables (adapters/sqlite/schedules.py). `schedules`: a user's schedule,
`next_at` the next firing due (ISO UTC, as domain.model.iso writes it; NULL: none left).
`schedule_firings`: one row per firing claimed, keyed by the schedule and the time, with
the run (or the queued message whose run takes its id) started for it; `state` 'redo': the
run stopped before its message was saved, to start again. Firings outlive their schedule
(the runs they name keep their scheduled time). `scheduler_ticks`: one row, the latest time
a scheduler ticked (what tells a missed firing from a late one). `graph` (added by
add_crons): a hosted graph's input, JSON (adapters/storage/graph_input.py), NULL for a
schedule of Sophos's agent; `webhook`: the URL told when a firing's run ends (NULL: none)."""

from __future__ import annotations

import sqlite3

MIGRATION_SCHEDULES = """
CREATE TABLE IF NOT EXISTS schedules (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    cron TEXT,
    tz TEXT NOT NULL,
    at TEXT,
    message TEXT NOT NULL,
    conversation_id TEXT REFERENCES conversations(id) ON DELETE CASCADE,
    catch_up TEXT NOT NULL CHECK (catch_up IN ('once', 'skip')),
    enabled INTEGER NOT NULL,
    ends_at TEXT,
    next_at TEXT,
    created_at TEXT NOT NULL,
    last_run_id TEXT,
    last_fired_for TEXT
);
CREATE INDEX IF NOT EXISTS schedules_due ON schedules (next_at) WHERE enabled = 1 AND next_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS schedules_by_owner ON schedules (owner, created_at);
CREATE TABLE IF NOT EXISTS schedule_firings (
    schedule_id TEXT NOT NULL,
    scheduled_for TEXT NOT NULL,
    run_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    queued INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL DEFAULT 'started' CHECK (state IN ('started', 'redo')),
    PRIMARY KEY (schedule_id, scheduled_for)
);
CREATE INDEX IF NOT EXISTS schedule_firings_by_run ON schedule_firings (run_id);
CREATE INDEX IF NOT EXISTS schedule_firings_redo ON schedule_firings (scheduled_for) WHERE state = 'redo';
CREATE TABLE IF NOT EXISTS scheduler_ticks (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    ticked_at TEXT NOT NULL
);
"""


def add_crons(conn: sqlite3.Connection) -> None:
    """A schedule's hosted-graph input and webhook. Idempotent (a file whose version was set
    back runs it again): SQLite has no ADD COLUMN IF NOT EXISTS, so the columns are looked for."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(schedules)")}
    for column in ("graph", "webhook"):
        if column not in have:
            conn.execute(f"ALTER TABLE schedules ADD COLUMN {column} TEXT")
