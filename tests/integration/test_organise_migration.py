"""The organising migration (SQLite 20, PostgreSQL 17; issue 48 items 12, 13) on a database
written before it: each conversation keeps what it meant. Its own prompt replaced the
server's, so it still does; a title may have been a person's, so only the placeholder may be
replaced by the model's; nothing is pinned, archived or temporary."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg

from adapters.postgres.database import MIGRATIONS as PG_MIGRATIONS
from adapters.postgres.database import PostgresDatabase, connection_options
from adapters.postgres.organise_schema import add_organising as pg_add_organising
from adapters.postgres.runs import PostgresRunStore
from adapters.sqlite.database import MIGRATIONS
from adapters.sqlite.organise_schema import add_organising
from adapters.sqlite.runs import SqliteRunStore
from domain.model import SystemMode, TitleSource, new_id, utc_now
from domain.models import ChatSettings
from ports.runs import RunRepository

DROPPED = ("system_mode", "pinned", "archived", "temporary", "title_by", "turns")


async def three_old_conversations(store: RunRepository) -> dict[str, str]:
    ids = {"own": new_id(), "placeholder": new_id(), "named": new_id()}
    await store.create_conversation(ids["own"], "Pirates", utc_now(), ChatSettings(None, "Talk like a pirate."))
    await store.create_conversation(ids["placeholder"], "New Conversation", utc_now())
    await store.create_conversation(ids["named"], "Taxes 2025", utc_now())
    return ids


async def meanings(store: RunRepository, ids: dict[str, str]) -> dict[str, tuple[object, ...]]:
    out = {}
    for key, cid in ids.items():
        c = await store.get_conversation(cid)
        assert c is not None
        out[key] = (c.system_mode, c.title_by, c.pinned, c.archived, c.temporary, c.turns)
    return out


EXPECTED = {
    "own": (SystemMode.REPLACE, TitleSource.USER, False, False, False, None),
    "placeholder": (SystemMode.ADD, TitleSource.MESSAGE, False, False, False, None),
    "named": (SystemMode.ADD, TitleSource.USER, False, False, False, None),
}


async def test_a_sqlite_file_from_before_keeps_what_each_conversation_meant(tmp_path: Path) -> None:
    path = tmp_path / "db" / "sophos.db"
    store = await SqliteRunStore.open(str(path))
    ids = await three_old_conversations(store)
    await store.aclose()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP INDEX conversations_temporary")
    for column in DROPPED:
        conn.execute(f"ALTER TABLE conversations DROP COLUMN {column}")
    conn.execute("DROP TABLE chat_presets")
    conn.execute(f"PRAGMA user_version = {MIGRATIONS.index(add_organising)}")
    conn.close()
    store = await SqliteRunStore.open(str(path))
    try:
        assert store.schema_version == len(MIGRATIONS)
        assert await meanings(store, ids) == EXPECTED
    finally:
        await store.aclose()


async def test_a_postgresql_database_from_before_keeps_what_each_conversation_meant(pg_url: str) -> None:
    store = PostgresRunStore(PostgresDatabase(pg_url))
    ids = await three_old_conversations(store)
    await store.aclose()
    with psycopg.connect(pg_url, **connection_options()) as conn:
        for column in DROPPED:
            conn.execute(f"ALTER TABLE conversations DROP COLUMN {column}".encode())
        conn.execute("DROP TABLE chat_presets")
        conn.execute("DELETE FROM sophos_migrations WHERE v > %s", (PG_MIGRATIONS.index(pg_add_organising),))
    store = PostgresRunStore(PostgresDatabase(pg_url))
    try:
        assert await meanings(store, ids) == EXPECTED
        assert store.schema_version == len(PG_MIGRATIONS)
    finally:
        await store.aclose()
