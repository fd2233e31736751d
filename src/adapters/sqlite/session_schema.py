"""The login sessions' table (adapters/sqlite/sessions.py): the key is a hash of the session
id, never the id; `fingerprint` names the API token the session was made under. Times are
Unix seconds (REAL), compared as numbers whatever the time zone."""

MIGRATION_SESSIONS = """
CREATE TABLE IF NOT EXISTS login_sessions (
    key TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL
) WITHOUT ROWID;
"""
