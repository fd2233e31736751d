"""The SessionStore contract, run against every adapter (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from adapters.memory.sessions import InMemorySessionStore
from adapters.postgres.database import PostgresDatabase
from adapters.postgres.sessions import PostgresSessionStore
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.sessions import SqliteSessionStore
from domain.model import utc_now
from domain.principals import BOOTSTRAP_ID
from domain.sessions import new_session_id, session_key
from ports.sessions import SessionStore

TOKEN_A = "a" * 64
TOKEN_B = "b" * 64


def a_key() -> str:
    return session_key(new_session_id())


def later(t: datetime, seconds: float) -> datetime:
    return t + timedelta(seconds=seconds)


async def live(store: SessionStore, key: str, fingerprint: str, now: datetime) -> bool:
    return await store.user_of(key, fingerprint, now) is not None


class SessionStoreContract:
    @pytest.fixture
    def store(self) -> SessionStore:
        raise NotImplementedError

    async def test_a_session_is_valid_until_its_end_and_not_from_it(self, store: SessionStore) -> None:
        now, key = utc_now(), a_key()
        await store.create(key, TOKEN_A, now, later(now, 60))
        assert await live(store, key, TOKEN_A, now)
        assert await live(store, key, TOKEN_A, later(now, 59.9))
        assert not await live(store, key, TOKEN_A, later(now, 60))
        assert not await live(store, key, TOKEN_A, later(now, 3600))
        assert not await live(store, a_key(), TOKEN_A, now)  # never stored

    async def test_a_session_made_under_another_token_is_not_valid(self, store: SessionStore) -> None:
        now, key = utc_now(), a_key()
        await store.create(key, TOKEN_A, now, later(now, 60))
        assert not await live(store, key, TOKEN_B, now)

    async def test_a_login_under_a_new_token_deletes_the_old_tokens_sessions(self, store: SessionStore) -> None:
        now, old, new = utc_now(), a_key(), a_key()
        await store.create(old, TOKEN_A, now, later(now, 60))
        await store.create(new, TOKEN_B, now, later(now, 60))
        assert not await store.delete(old)  # gone already
        assert await live(store, new, TOKEN_B, now)

    async def test_a_login_deletes_expired_sessions_only(self, store: SessionStore) -> None:
        now, short, long, fresh = utc_now(), a_key(), a_key(), a_key()
        await store.create(short, TOKEN_A, now, later(now, 10))
        await store.create(long, TOKEN_A, now, later(now, 100))
        await store.create(fresh, TOKEN_A, later(now, 10), later(now, 70))
        assert not await store.delete(short)
        assert await live(store, long, TOKEN_A, later(now, 10))
        assert await store.delete_principal(BOOTSTRAP_ID) == 2

    async def test_log_out_ends_one_session_and_leaves_the_others(self, store: SessionStore) -> None:
        now, mine, theirs = utc_now(), a_key(), a_key()
        for key in (mine, theirs):
            await store.create(key, TOKEN_A, now, later(now, 60))
        assert await store.delete(mine)
        assert not await live(store, mine, TOKEN_A, now)
        assert await live(store, theirs, TOKEN_A, now)
        assert not await store.delete(mine)

    async def test_log_out_everywhere_ends_every_session_of_that_user_only(self, store: SessionStore) -> None:
        now, other = utc_now(), a_key()
        keys = [a_key() for _ in range(3)]
        for key in keys:
            await store.create(key, TOKEN_A, now, later(now, 60))
        await store.create(other, TOKEN_A, now, later(now, 60), principal="u_0123456789abcdef")
        assert await store.delete_principal(BOOTSTRAP_ID) == 3
        assert [await live(store, k, TOKEN_A, now) for k in keys] == [False] * 3
        assert await store.user_of(other, TOKEN_A, now) == "u_0123456789abcdef"
        assert await store.delete_principal(BOOTSTRAP_ID) == 0

    async def test_creating_a_stored_key_again_replaces_it(self, store: SessionStore) -> None:
        now, key = utc_now(), a_key()
        await store.create(key, TOKEN_A, now, later(now, 60))
        await store.create(key, TOKEN_A, now, later(now, 600))
        assert await live(store, key, TOKEN_A, later(now, 300))
        assert await store.delete_principal(BOOTSTRAP_ID) == 1


class TestInMemorySessionStore(SessionStoreContract):
    @pytest.fixture
    def store(self) -> SessionStore:
        return InMemorySessionStore()


class TestSqliteSessionStore(SessionStoreContract):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SessionStore]:
        runs = await SqliteRunStore.open(str(tmp_path / "db" / "sophos.db"))
        yield SqliteSessionStore(*runs.workers())
        await runs.aclose()

    async def test_another_process_on_the_file_sees_log_in_and_log_out(self, tmp_path: Path) -> None:
        path = str(tmp_path / "db" / "sophos.db")
        one, two = await SqliteRunStore.open(path), await SqliteRunStore.open(path)
        try:
            a, b = SqliteSessionStore(*one.workers()), SqliteSessionStore(*two.workers())
            now, key = utc_now(), a_key()
            await a.create(key, TOKEN_A, now, later(now, 60))
            assert await live(b, key, TOKEN_A, now)
            await b.delete(key)
            assert not await live(a, key, TOKEN_A, now)
        finally:
            await one.aclose()
            await two.aclose()

    async def test_the_file_holds_the_key_never_the_session_id(self, tmp_path: Path) -> None:
        path = tmp_path / "db" / "sophos.db"
        runs = await SqliteRunStore.open(str(path))
        session_id, now = new_session_id(), utc_now()
        await SqliteSessionStore(*runs.workers()).create(session_key(session_id), TOKEN_A, now, later(now, 60))
        await runs.aclose()
        stored = b"".join(p.read_bytes() for p in path.parent.iterdir())
        assert session_key(session_id).encode() in stored and session_id.encode() not in stored


class TestPostgresSessionStore(SessionStoreContract):
    @pytest.fixture
    async def store(self, pg_url: str) -> AsyncIterator[SessionStore]:
        db = PostgresDatabase(pg_url)
        yield PostgresSessionStore(db)
        await db.close()

    async def test_a_login_through_one_pool_is_a_session_for_another(self, pg_url: str) -> None:
        one, two = PostgresDatabase(pg_url), PostgresDatabase(pg_url)
        try:
            a, b = PostgresSessionStore(one), PostgresSessionStore(two)
            now, key = utc_now(), a_key()
            await a.create(key, TOKEN_A, now, later(now, 60))
            assert await live(b, key, TOKEN_A, now)
            await b.delete_principal(BOOTSTRAP_ID)
            assert not await live(a, key, TOKEN_A, now)
        finally:
            await one.close()
            await two.close()
