"""The UserStore contract (and the user a login session acts as), run against every adapter
(memory, SQLite, PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

from adapters.memory.sessions import InMemorySessionStore
from adapters.memory.users import InMemoryUserStore
from adapters.postgres.database import PostgresDatabase
from adapters.postgres.sessions import PostgresSessionStore
from adapters.postgres.users import PostgresUserStore
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.sessions import SqliteSessionStore
from adapters.sqlite.users import SqliteUserStore
from domain.errors import UserExists, UserNotFound
from domain.model import utc_now
from domain.principals import BOOTSTRAP_ID, Principal, Role, new_token, new_user_id
from domain.sessions import new_session_id, session_key
from ports.sessions import SessionStore
from ports.users import UserStore

FINGERPRINT = "f" * 64


def unique(prefix: str) -> str:
    return f"{prefix}-{new_user_id()[2:]}"


async def a_refused_use_still_names_the_user(users: UserStore, refuse_writes: Callable[[], Awaitable[None]]) -> None:
    """A full disk must not lock users out: the last use is recorded when it can be."""
    now = utc_now()
    user = await users.add_user(new_user_id(), unique("ro"), Role.USER, now)
    made = new_token()
    await users.add_token(made.id, user.id, made.hash, "", now)
    await refuse_writes()
    assert await users.by_token(made.hash, now) == user.principal()  # a first use: a write is due
    assert await users.by_token(made.hash, now + timedelta(seconds=61)) == user.principal()
    assert (await users.tokens(user.id))[0].last_used_at is None  # refused, as the store said


class UserStoreContract:
    @pytest.fixture
    def stores(self) -> tuple[UserStore, SessionStore]:
        raise NotImplementedError

    @pytest.fixture
    def users(self, stores: tuple[UserStore, SessionStore]) -> UserStore:
        return stores[0]

    async def test_a_user_is_found_by_id_or_by_name_whatever_its_case(self, users: UserStore) -> None:
        name, now = unique("Ann"), utc_now()
        added = await users.add_user(new_user_id(), name, Role.USER, now)
        assert added.name == name and added.role is Role.USER and not added.disabled
        assert await users.user(added.id) == added
        found = await users.user(name.upper())
        assert found is not None and found.id == added.id
        assert await users.user(unique("nobody")) is None
        assert await users.any_users()
        assert added.id in [u.id for u in await users.users()]

    async def test_a_name_is_taken_whatever_its_case(self, users: UserStore) -> None:
        name, now = unique("bob"), utc_now()
        await users.add_user(new_user_id(), name, Role.USER, now)
        with pytest.raises(UserExists):
            await users.add_user(new_user_id(), name.upper(), Role.ADMIN, now)

    async def test_a_token_names_its_enabled_user_until_revoked(self, users: UserStore) -> None:
        now = utc_now()
        user = await users.add_user(new_user_id(), unique("cy"), Role.ADMIN, now)
        made = new_token()
        record = await users.add_token(made.id, user.id, made.hash, "laptop", now)
        assert (record.user_id, record.label, record.revoked_at) == (user.id, "laptop", None)
        assert await users.by_token(made.hash, now) == Principal(user.id, user.name, Role.ADMIN)
        assert await users.by_token(new_token().hash, now) is None
        revoked = await users.revoke_token(made.id, now + timedelta(seconds=5))
        assert revoked is not None and revoked.revoked_at is not None
        assert await users.by_token(made.hash, now) is None
        again = await users.revoke_token(made.id, now + timedelta(seconds=50))
        assert again is not None and again.revoked_at == revoked.revoked_at  # the first time stays
        assert await users.revoke_token("t_0000000000000000", now) is None

    async def test_a_disabled_user_has_no_principal_until_enabled(self, users: UserStore) -> None:
        now = utc_now()
        user = await users.add_user(new_user_id(), unique("di"), Role.USER, now)
        made = new_token()
        await users.add_token(made.id, user.id, made.hash, "", now)
        assert await users.set_disabled(user.id, True)
        assert await users.by_token(made.hash, now) is None
        assert await users.principal(user.id) is None
        assert await users.set_disabled(user.id, False)
        assert await users.principal(user.id) == user.principal()
        assert await users.by_token(made.hash, now) == user.principal()
        assert not await users.set_disabled(new_user_id(), True)

    async def test_a_deleted_user_is_gone_with_their_tokens_and_the_others_stay(self, users: UserStore) -> None:
        now = utc_now()
        ann = await users.add_user(new_user_id(), unique("an"), Role.USER, now)
        bob = await users.add_user(new_user_id(), unique("bo"), Role.USER, now)
        hers, his = new_token(), new_token()
        await users.add_token(hers.id, ann.id, hers.hash, "", now)
        await users.add_token(his.id, bob.id, his.hash, "", now)
        assert await users.delete_user(ann.id)
        assert await users.user(ann.id) is None and await users.user(ann.name) is None
        assert await users.by_token(hers.hash, now) is None and await users.tokens(ann.id) == []
        assert await users.by_token(his.hash, now) == bob.principal()
        assert not await users.delete_user(ann.id)
        again = await users.add_user(new_user_id(), ann.name, Role.USER, now)  # the name is free again
        assert again.name == ann.name

    async def test_a_use_is_recorded_at_most_once_a_minute(self, users: UserStore) -> None:
        now = utc_now()
        user = await users.add_user(new_user_id(), unique("ed"), Role.USER, now)
        made = new_token()
        await users.add_token(made.id, user.id, made.hash, "", now)
        assert (await users.tokens(user.id))[0].last_used_at is None
        await users.by_token(made.hash, now)
        await users.by_token(made.hash, now + timedelta(seconds=30))
        first = (await users.tokens(user.id))[0].last_used_at
        assert first is not None and abs((first - now).total_seconds()) < 0.01
        await users.by_token(made.hash, now + timedelta(seconds=61))
        later = (await users.tokens(user.id))[0].last_used_at
        assert later is not None and abs((later - now).total_seconds() - 61) < 0.01

    async def test_a_token_needs_an_existing_user(self, users: UserStore) -> None:
        made = new_token()
        with pytest.raises(UserNotFound):
            await users.add_token(made.id, new_user_id(), made.hash, "", utc_now())

    async def test_a_session_acts_as_its_user_and_ends_with_that_users_sessions(
        self, stores: tuple[UserStore, SessionStore]
    ) -> None:
        _, sessions = stores
        now, mine, theirs, admins = (
            utc_now(),
            session_key(new_session_id()),
            session_key(new_session_id()),
            session_key(new_session_id()),
        )
        ann, bob = new_user_id(), new_user_id()
        await sessions.create(mine, FINGERPRINT, now, now + timedelta(seconds=60), ann)
        await sessions.create(theirs, FINGERPRINT, now, now + timedelta(seconds=60), bob)
        await sessions.create(admins, FINGERPRINT, now, now + timedelta(seconds=60))
        assert await sessions.user_of(mine, FINGERPRINT, now) == ann
        assert await sessions.user_of(admins, FINGERPRINT, now) == BOOTSTRAP_ID
        assert await sessions.user_of(mine, "0" * 64, now) is None
        assert await sessions.delete_principal(ann) == 1
        assert await sessions.user_of(mine, FINGERPRINT, now) is None
        assert await sessions.user_of(theirs, FINGERPRINT, now) == bob
        assert await sessions.delete_principal(ann) == 0


class TestInMemoryUserStore(UserStoreContract):
    @pytest.fixture
    def stores(self) -> tuple[UserStore, SessionStore]:
        return InMemoryUserStore(), InMemorySessionStore()


class TestSqliteUserStore(UserStoreContract):
    @pytest.fixture
    async def stores(self, tmp_path: Path) -> AsyncIterator[tuple[UserStore, SessionStore]]:
        runs = await SqliteRunStore.open(str(tmp_path / "db" / "sophos.db"))
        yield SqliteUserStore(*runs.workers()), SqliteSessionStore(*runs.workers())
        await runs.aclose()

    async def test_a_token_works_when_its_use_cannot_be_recorded(self, tmp_path: Path) -> None:
        runs = await SqliteRunStore.open(str(tmp_path / "db" / "sophos.db"))
        writer, _ = runs.workers()

        async def read_only() -> None:  # what a full disk does to the writer's statements
            writer.call(lambda c: c.execute("PRAGMA query_only = 1"))

        try:
            await a_refused_use_still_names_the_user(SqliteUserStore(*runs.workers()), read_only)
        finally:
            await runs.aclose()

    async def test_the_file_holds_the_tokens_hash_never_the_token(self, tmp_path: Path) -> None:
        path = tmp_path / "db" / "sophos.db"
        runs = await SqliteRunStore.open(str(path))
        users = SqliteUserStore(*runs.workers())
        user = await users.add_user(new_user_id(), "fay", Role.USER, utc_now())
        made = new_token()
        await users.add_token(made.id, user.id, made.hash, "", utc_now())
        await runs.aclose()
        stored = b"".join(p.read_bytes() for p in path.parent.iterdir())
        assert made.hash.encode() in stored and made.token.encode() not in stored

    async def test_a_revoke_through_one_process_is_seen_by_another_at_once(self, tmp_path: Path) -> None:
        path = str(tmp_path / "db" / "sophos.db")
        one, two = await SqliteRunStore.open(path), await SqliteRunStore.open(path)
        try:
            a, b = SqliteUserStore(*one.workers()), SqliteUserStore(*two.workers())
            now, made = utc_now(), new_token()
            user = await a.add_user(new_user_id(), "gil", Role.USER, now)
            await a.add_token(made.id, user.id, made.hash, "", now)
            assert await b.by_token(made.hash, now) == user.principal()
            await a.revoke_token(made.id, now)
            assert await b.by_token(made.hash, now) is None
        finally:
            await one.aclose()
            await two.aclose()


class TestPostgresUserStore(UserStoreContract):
    @pytest.fixture
    async def stores(self, pg_url: str) -> AsyncIterator[tuple[UserStore, SessionStore]]:
        db = PostgresDatabase(pg_url)
        yield PostgresUserStore(db), PostgresSessionStore(db)
        await db.close()

    async def test_a_token_works_when_its_use_cannot_be_recorded(self, pg_url: str) -> None:
        db = PostgresDatabase(pg_url)

        async def disk_full() -> None:  # PostgreSQL's own error for a full disk, on every update
            async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
                await conn.execute(
                    "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
                    "$$ BEGIN RAISE EXCEPTION 'could not extend file' USING ERRCODE = 'disk_full'; END $$"
                )
                await conn.execute("CREATE TRIGGER disk_full BEFORE UPDATE ON api_tokens FOR EACH ROW EXECUTE FUNCTION refuse()")

        try:
            await a_refused_use_still_names_the_user(PostgresUserStore(db), disk_full)
        finally:
            await db.close()
