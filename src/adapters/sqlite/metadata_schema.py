"""LangGraph thread metadata (issue 29): one JSON object per conversation, gone with it."""

MIGRATION_THREAD_METADATA = """
CREATE TABLE IF NOT EXISTS thread_metadata (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
    metadata TEXT NOT NULL
) WITHOUT ROWID;
"""
