"""The trace spans (adapters/postgres/traces.py): one row per span, recorded before the work
it describes starts, ended when it ends, acknowledged once a receiver has it. Times are Unix
nanoseconds (BIGINT); `claimed_until` (Unix seconds) leases a row to the process shipping it,
claimed with FOR UPDATE SKIP LOCKED. No foreign key: a deleted conversation's spans are
still shipped."""

MIGRATION_TRACES = """
CREATE TABLE IF NOT EXISTS trace_spans (
    seq BIGINT GENERATED ALWAYS AS IDENTITY,
    span_id TEXT PRIMARY KEY,
    trace_id TEXT NOT NULL,
    parent_id TEXT,
    conversation_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    started BIGINT NOT NULL,
    ended BIGINT,
    status TEXT NOT NULL DEFAULT 'unset',
    attributes JSONB NOT NULL DEFAULT '{}',
    acked BOOLEAN NOT NULL DEFAULT false,
    claimed_until DOUBLE PRECISION NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS trace_spans_unacked ON trace_spans (seq) WHERE NOT acked;
CREATE INDEX IF NOT EXISTS trace_spans_runs ON trace_spans (conversation_id, started) WHERE kind = 'agent'
"""
