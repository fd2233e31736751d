"""Attached files on PostgreSQL: each file's bytes once (content-addressed), and which
conversations hold it, written in the fenced transaction of the message that carries it
(adapters.langgraph.files)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import AsyncCursor

from domain.attachments import StoredFile, Upload

# appended to database.MIGRATIONS (v11): idempotent, as every later migration
MIGRATION_FILES = """
CREATE TABLE IF NOT EXISTS attachment_blobs (
    digest TEXT PRIMARY KEY,
    media_type TEXT NOT NULL,
    size BIGINT NOT NULL,
    data BYTEA NOT NULL,
    text TEXT
);
CREATE TABLE IF NOT EXISTS attachment_refs (
    conversation_id TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (conversation_id, digest)
);
CREATE INDEX IF NOT EXISTS attachment_refs_by_digest ON attachment_refs (digest)
"""


async def store(cur: AsyncCursor[Any], thread_id: str, uploads: Sequence[Upload]) -> None:
    if not uploads:
        return
    await cur.executemany(
        "INSERT INTO attachment_blobs (digest, media_type, size, data, text) VALUES (%s, %s, %s, %s, %s) "
        "ON CONFLICT (digest) DO NOTHING",
        [(u.attachment.digest, u.attachment.media_type, u.attachment.size, u.data, u.text) for u in uploads],
    )
    await cur.executemany(
        "INSERT INTO attachment_refs (conversation_id, digest) VALUES (%s, %s) ON CONFLICT DO NOTHING",
        [(thread_id, u.attachment.digest) for u in uploads],
    )


async def read(cur: AsyncCursor[Any], thread_id: str, digests: Sequence[str]) -> dict[str, StoredFile]:
    if not digests:
        return {}
    await cur.execute(
        "SELECT b.digest, b.media_type, b.data, b.text FROM attachment_refs r JOIN attachment_blobs b "
        "ON b.digest = r.digest WHERE r.conversation_id = %s AND r.digest = ANY(%s)",
        (thread_id, list(dict.fromkeys(digests))),
    )
    return {row[0]: StoredFile(row[1], bytes(row[2]), row[3]) for row in await cur.fetchall()}


async def forget(cur: AsyncCursor[Any], thread_id: str, only: Sequence[str] | None = None) -> None:
    """The conversation's references (`only` these files, or all), and the files no other
    conversation holds."""
    await cur.execute(
        "WITH gone AS (DELETE FROM attachment_refs WHERE conversation_id = %s AND (%s::text[] IS NULL OR digest = ANY(%s)) "
        "RETURNING digest) "
        "DELETE FROM attachment_blobs b USING gone WHERE b.digest = gone.digest "
        "AND NOT EXISTS (SELECT 1 FROM attachment_refs r WHERE r.digest = gone.digest AND r.conversation_id <> %s)",
        (thread_id, None if only is None else list(only), None if only is None else list(only), thread_id),
    )


async def texts(cur: AsyncCursor[Any], thread_id: str, digests: Sequence[str]) -> dict[str, str]:
    """The text of the thread's files among `digests` that have one (not images)."""
    if not digests:
        return {}
    await cur.execute(
        "SELECT b.digest, b.text FROM attachment_refs r JOIN attachment_blobs b ON b.digest = r.digest "
        "WHERE r.conversation_id = %s AND r.digest = ANY(%s) AND b.text IS NOT NULL",
        (thread_id, list(dict.fromkeys(digests))),
    )
    return {row[0]: row[1] for row in await cur.fetchall()}
