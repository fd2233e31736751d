"""The search index's stems (migration 16; see adapters/postgres/search.py): each entry's
distinct word stems as a second tsvector under its own GIN index, computed in Python from
the stored text (adapters.search_text's stemmer, which PostgreSQL does not have)."""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection

from adapters.postgres.search_text import stem_terms, terms

BATCH = 1000
UNSTEMMED = "SELECT id, body FROM search_entries WHERE id > %s AND stems IS NULL ORDER BY id LIMIT %s"
SET_STEMS = (
    "UPDATE search_entries e SET stems = strip(to_tsvector('simple', v.stems)) "
    "FROM unnest(%s::bigint[], %s::text[]) AS v(id, stems) WHERE e.id = v.id"
)


async def add_stems(conn: AsyncConnection[Any]) -> None:
    """Give every entry its stems, then require them and index them (idempotent)."""
    await conn.execute("ALTER TABLE search_entries ADD COLUMN IF NOT EXISTS stems TSVECTOR")
    last = 0
    async with conn.cursor() as cur:
        while True:
            await cur.execute(UNSTEMMED, (last, BATCH))
            rows = await cur.fetchall()
            if not rows:
                break
            await cur.execute(SET_STEMS, ([i for i, _ in rows], [stem_terms(terms(body)) for _, body in rows]))
            last = rows[-1][0]
    await conn.execute("ALTER TABLE search_entries ALTER COLUMN stems SET NOT NULL")
    await conn.execute("CREATE INDEX IF NOT EXISTS search_entries_stems ON search_entries USING gin (stems)")
