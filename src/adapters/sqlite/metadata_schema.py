"""LangGraph thread metadata (issue 29): one JSON object per conversation, gone with it; and
the run kwargs the LangGraph API keeps per run (issue 48: a run's stream modes)."""

MIGRATION_THREAD_METADATA = """
CREATE TABLE IF NOT EXISTS thread_metadata (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
    metadata TEXT NOT NULL
) WITHOUT ROWID;
"""

MIGRATION_RUN_KWARGS = """
CREATE TABLE IF NOT EXISTS run_kwargs (
    run_id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    kwargs TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS run_kwargs_conversation ON run_kwargs (conversation_id);
"""
