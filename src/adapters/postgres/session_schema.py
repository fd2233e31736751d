"""The login sessions' table (adapters/postgres/sessions.py): the key is a hash of the session
id, never the id; `fingerprint` names the API token the session was made under."""

MIGRATION_SESSIONS = """
CREATE TABLE IF NOT EXISTS login_sessions (
    key TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
)
"""
