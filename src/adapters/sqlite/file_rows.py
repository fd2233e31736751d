"""Attached files on SQLite: each file's bytes once (content-addressed), and which
conversations hold it, written with the checkpoint's cursor in the transaction of the
message that carries it (adapters.langgraph.files)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from domain.attachments import StoredFile, Upload

# appended to database.MIGRATIONS (v14): idempotent, as every later migration
MIGRATION_FILES = """
CREATE TABLE IF NOT EXISTS attachment_blobs (
    digest TEXT PRIMARY KEY,
    media_type TEXT NOT NULL,
    size INTEGER NOT NULL,
    data BLOB NOT NULL,
    text TEXT
);
CREATE TABLE IF NOT EXISTS attachment_refs (
    conversation_id TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (conversation_id, digest)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS attachment_refs_by_digest ON attachment_refs (digest)
"""


def store(cur: sqlite3.Cursor, thread_id: str, uploads: Sequence[Upload]) -> int:
    """The files not stored yet, and the conversation's references to them; returns the
    bytes offered."""
    if not uploads:
        return 0
    cur.executemany(
        "INSERT OR IGNORE INTO attachment_blobs (digest, media_type, size, data, text) VALUES (?, ?, ?, ?, ?)",
        [(u.attachment.digest, u.attachment.media_type, u.attachment.size, u.data, u.text) for u in uploads],
    )
    cur.executemany(
        "INSERT OR IGNORE INTO attachment_refs (conversation_id, digest) VALUES (?, ?)",
        [(thread_id, u.attachment.digest) for u in uploads],
    )
    return sum(len(u.data) for u in uploads)


def read(cur: sqlite3.Cursor, thread_id: str, digests: Sequence[str]) -> dict[str, StoredFile]:
    out: dict[str, StoredFile] = {}
    for digest in dict.fromkeys(digests):
        row = cur.execute(
            "SELECT b.media_type, b.data, b.text FROM attachment_refs r JOIN attachment_blobs b ON b.digest = r.digest "
            "WHERE r.conversation_id = ? AND r.digest = ?",
            (thread_id, digest),
        ).fetchone()
        if row is not None:
            out[digest] = StoredFile(row[0], bytes(row[1]), row[2])
    return out


def forget(cur: sqlite3.Cursor, thread_id: str, only: Sequence[str] | None = None) -> None:
    """The conversation's references (`only` these files, or all), and the files no other
    conversation holds."""
    held = [r[0] for r in cur.execute("SELECT digest FROM attachment_refs WHERE conversation_id = ?", (thread_id,))]
    digests = held if only is None else [d for d in held if d in set(only)]
    cur.executemany("DELETE FROM attachment_refs WHERE conversation_id = ? AND digest = ?", [(thread_id, d) for d in digests])
    cur.executemany(
        "DELETE FROM attachment_blobs WHERE digest = ? AND NOT EXISTS (SELECT 1 FROM attachment_refs WHERE digest = ?)",
        [(d, d) for d in digests],
    )


def texts(cur: sqlite3.Cursor, thread_id: str, digests: Sequence[str]) -> dict[str, str]:
    """The text of the thread's files among `digests` that have one (not images)."""
    out: dict[str, str] = {}
    for digest in dict.fromkeys(digests):
        row = cur.execute(
            "SELECT b.text FROM attachment_refs r JOIN attachment_blobs b ON b.digest = r.digest "
            "WHERE r.conversation_id = ? AND r.digest = ? AND b.text IS NOT NULL",
            (thread_id, digest),
        ).fetchone()
        if row is not None:
            out[digest] = row[0]
    return out
