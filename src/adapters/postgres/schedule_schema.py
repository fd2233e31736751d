"""The schedules' tables (adapters/postgres/schedules.py), as on SQLite
(adapters/sqlite/schedule_schema.py), with MIGRATION_CRONS's `graph` (a hosted graph's
input as JSON text, adapters/storage/graph_input.py) and `webhook`."""

MIGRATION_SCHEDULES = """
CREATE TABLE IF NOT EXISTS schedules (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    cron TEXT,
    tz TEXT NOT NULL,
    at TIMESTAMPTZ,
    message TEXT NOT NULL,
    conversation_id TEXT REFERENCES conversations(id) ON DELETE CASCADE,
    catch_up TEXT NOT NULL CHECK (catch_up IN ('once', 'skip')),
    enabled BOOLEAN NOT NULL,
    ends_at TIMESTAMPTZ,
    next_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL,
    last_run_id TEXT,
    last_fired_for TIMESTAMPTZ
);
CREATE INDEX IF NOT EXISTS schedules_due ON schedules (next_at) WHERE enabled AND next_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS schedules_by_owner ON schedules (owner, created_at);
CREATE TABLE IF NOT EXISTS schedule_firings (
    schedule_id TEXT NOT NULL,
    scheduled_for TIMESTAMPTZ NOT NULL,
    run_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    queued BOOLEAN NOT NULL DEFAULT FALSE,
    state TEXT NOT NULL DEFAULT 'started' CHECK (state IN ('started', 'redo')),
    PRIMARY KEY (schedule_id, scheduled_for)
);
CREATE INDEX IF NOT EXISTS schedule_firings_by_run ON schedule_firings (run_id);
CREATE INDEX IF NOT EXISTS schedule_firings_redo ON schedule_firings (scheduled_for) WHERE state = 'redo';
CREATE TABLE IF NOT EXISTS scheduler_ticks (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    ticked_at TIMESTAMPTZ NOT NULL
)
"""

MIGRATION_CRONS = """
ALTER TABLE schedules ADD COLUMN IF NOT EXISTS graph TEXT;
ALTER TABLE schedules ADD COLUMN IF NOT EXISTS webhook TEXT
"""
