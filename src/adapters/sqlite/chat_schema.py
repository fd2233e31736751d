"""Migration 11: a conversation's own model and system prompt (issue 32).

NULL is the server's default (OLLAMA_MODEL or OPENAI_MODEL, config/system.md), so rows
written before this migration mean what they always meant. SQLite has no ADD COLUMN IF NOT
EXISTS: the migration runs once, under PRAGMA user_version like every other."""

MIGRATION_CHAT_SETTINGS = """
ALTER TABLE conversations ADD COLUMN model TEXT;
ALTER TABLE conversations ADD COLUMN system TEXT;
"""
