"""The usage rows (one per user, model and UTC day: adapters/postgres/usage.py) and the
audit log (append-only, numbered by an identity column)."""

MIGRATION_USAGE_AUDIT = """
CREATE TABLE IF NOT EXISTS usage_days (
    owner TEXT NOT NULL,
    model TEXT NOT NULL,
    day DATE NOT NULL,
    input_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    model_seconds DOUBLE PRECISION NOT NULL DEFAULT 0,
    tool_seconds DOUBLE PRECISION NOT NULL DEFAULT 0,
    calls BIGINT NOT NULL DEFAULT 0,
    estimated_calls BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (owner, day, model)
);
CREATE INDEX IF NOT EXISTS usage_days_day ON usage_days (day);
CREATE TABLE IF NOT EXISTS audit_log (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at TIMESTAMPTZ NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    origin TEXT NOT NULL,
    target TEXT NOT NULL DEFAULT '',
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS audit_log_at ON audit_log (at)
"""
