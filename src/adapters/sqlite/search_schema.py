"""The search index's tables (migration 5; see adapters/sqlite/search.py)."""

# v5 in database.MIGRATIONS. Messages of existing threads are indexed by the checkpointer
# when it opens the file (`index_missing`): their checkpoints need LangGraph to decode.
MIGRATION_SEARCH = """
CREATE TABLE search_entries (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    message_index INTEGER,
    role TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX search_entries_by_conversation ON search_entries (conversation_id, message_index);
CREATE VIRTUAL TABLE search_fts USING fts5(
    body, content='search_entries', content_rowid='id', tokenize='unicode61 remove_diacritics 2',
    prefix='2 3'
);
CREATE TRIGGER search_entries_ai AFTER INSERT ON search_entries BEGIN
    INSERT INTO search_fts (rowid, body) VALUES (new.id, new.body);
END;
CREATE TRIGGER search_entries_ad AFTER DELETE ON search_entries BEGIN
    INSERT INTO search_fts (search_fts, rowid, body) VALUES ('delete', old.id, old.body);
END;
CREATE TRIGGER search_entries_au AFTER UPDATE OF body ON search_entries BEGIN
    INSERT INTO search_fts (search_fts, rowid, body) VALUES ('delete', old.id, old.body);
    INSERT INTO search_fts (rowid, body) VALUES (new.id, new.body);
END;
CREATE TABLE search_threads (
    conversation_id TEXT PRIMARY KEY,
    raw_count INTEGER NOT NULL,
    next_index INTEGER NOT NULL,
    last_id TEXT
);
CREATE TRIGGER conversations_search_ai AFTER INSERT ON conversations BEGIN
    INSERT INTO search_entries (conversation_id, message_index, role, body) VALUES (new.id, NULL, 'title', new.title);
END;
CREATE TRIGGER conversations_search_au AFTER UPDATE OF title ON conversations BEGIN
    UPDATE search_entries SET body = new.title WHERE conversation_id = new.id AND message_index IS NULL;
END;
CREATE TRIGGER conversations_search_ad AFTER DELETE ON conversations BEGIN
    DELETE FROM search_entries WHERE conversation_id = old.id;
    DELETE FROM search_threads WHERE conversation_id = old.id;
END;
INSERT INTO search_entries (conversation_id, message_index, role, body)
    SELECT id, NULL, 'title', title FROM conversations
"""
