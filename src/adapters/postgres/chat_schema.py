"""Migration 8: a conversation's own model and system prompt (issue 32); NULL is the
server's default, so rows written before it mean what they always meant."""

MIGRATION_CHAT_SETTINGS = """
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS model TEXT;
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS system TEXT
"""
