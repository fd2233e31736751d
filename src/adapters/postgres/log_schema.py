"""Migration 6: the checkpoint log's last messages in their own storage format
(adapters.storage.message_log) instead of the API's MessageDto.

In Python rather than SQL: PostgreSQL's JSON functions refuse a string holding \\u0000
("cannot be converted to text"), which a message may hold. Rows already in the format
(`{"v": ...`, as json.dumps writes them) are left alone."""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection

from adapters.storage import message_log

OLD_ROWS = (
    "SELECT thread_id, checkpoint_ns, checkpoint_id, last_message FROM checkpoint_log "
    "WHERE last_message IS NOT NULL AND last_message NOT LIKE '{\"v\": %%'"
)
UPDATE = "UPDATE checkpoint_log SET last_message = %s WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s"


async def migrate_log_format(conn: AsyncConnection[Any]) -> None:
    async with conn.cursor(name="sophos_log_format") as rows, conn.cursor() as writes:
        await rows.execute(OLD_ROWS)
        while batch := await rows.fetchmany(1000):
            await writes.executemany(UPDATE, [(message_log.upgrade(m), t, ns, c) for t, ns, c, m in batch])
