"""The UsageStore and AuditLog contracts (issue 47 items 3 and 4), run against every adapter
(memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from adapters.memory.usage import InMemoryAuditLog, InMemoryUsageStore
from adapters.postgres.database import PostgresDatabase
from adapters.postgres.usage import PostgresAuditLog, PostgresUsageStore
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.usage import SqliteAuditLog, SqliteUsageStore
from domain.audit import AuditEntry
from domain.model import new_id
from domain.usage import Cost
from ports.audit import AuditLog
from ports.usage import UsageStore

DAY = date(2026, 3, 1)
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class UsageStoreContract:
    @pytest.fixture
    def store(self) -> UsageStore:
        raise NotImplementedError

    async def test_costs_add_up_per_user_model_and_day(self, store: UsageStore) -> None:
        ann = new_id()
        await store.add(ann, "qwen3", DAY, Cost(10, 3, 1.5, 0, 1))
        await store.add(ann, "qwen3", DAY, Cost(20, 4, 0.5, 0, 1, estimated=True))
        await store.add(ann, "qwen3", DAY, Cost(tool_seconds=2.25))
        await store.add(ann, "llama3.2", DAY, Cost(1, 1, 0.1, 0, 1))
        await store.add(ann, "qwen3", DAY + timedelta(days=1), Cost(7, 7, 1, 0, 1))
        rows = await store.rows(ann, DAY, DAY)
        assert [(r.model, r.input_tokens, r.output_tokens, r.calls, r.estimated_calls) for r in rows] == [
            ("llama3.2", 1, 1, 1, 0),
            ("qwen3", 30, 7, 2, 1),
        ]
        assert rows[1].model_seconds == pytest.approx(2.0) and rows[1].tool_seconds == pytest.approx(2.25)
        assert await store.tokens(ann, DAY) == 39
        assert await store.tokens(ann, DAY + timedelta(days=1)) == 14
        assert [r.day for r in await store.rows(ann, DAY, DAY + timedelta(days=1))] == [DAY, DAY, DAY + timedelta(days=1)]

    async def test_each_user_has_their_own_rows_and_none_is_everyones(self, store: UsageStore) -> None:
        ann, bob = new_id(), new_id()
        await store.add(ann, "m", DAY, Cost(5, 0, 0, 0, 1))
        await store.add(bob, "m", DAY, Cost(6, 0, 0, 0, 1))
        assert [r.user for r in await store.rows(ann, DAY, DAY)] == [ann]
        assert {r.user for r in await store.rows(None, DAY, DAY)} >= {ann, bob}
        assert await store.tokens(new_id(), DAY) == 0

    async def test_adds_at_once_all_count(self, store: UsageStore) -> None:
        ann = new_id()
        await asyncio.gather(*(store.add(ann, "m", DAY, Cost(1, 2, 0, 0, 1)) for _ in range(20)))
        assert await store.tokens(ann, DAY) == 60
        assert (await store.rows(ann, DAY, DAY))[0].calls == 20


class AuditLogContract:
    @pytest.fixture
    def log(self) -> AuditLog:
        raise NotImplementedError

    async def test_rows_come_back_in_the_order_appended_numbered(self, log: AuditLog) -> None:
        actor = new_id()
        for i in range(5):
            await log.append(AuditEntry(T0 + timedelta(seconds=i), actor, f"a{i}", "10.0.0.1", "t", "d"))
        mine = [e for e in await log.entries(T0, 1000) if e.actor == actor]
        assert [e.action for e in mine] == ["a0", "a1", "a2", "a3", "a4"]
        assert [e.seq for e in mine] == sorted(e.seq for e in mine) and mine[0].seq > 0
        assert mine[0].at == T0 and mine[0].origin == "10.0.0.1" and mine[0].target == "t" and mine[0].detail == "d"
        assert [e.action for e in await log.entries(T0 + timedelta(seconds=3), 1000) if e.actor == actor] == ["a3", "a4"]

    async def test_prune_removes_only_rows_older_than_the_cut(self, log: AuditLog) -> None:
        actor = new_id()
        old = datetime(2000, 1, 1, tzinfo=UTC)
        await log.append(AuditEntry(old, actor, "old", "cli:me"))
        await log.append(AuditEntry(T0, actor, "new", "cli:me"))
        assert await log.prune(old + timedelta(days=1)) >= 1
        assert [e.action for e in await log.entries(None, 100_000) if e.actor == actor] == ["new"]


class TestInMemoryUsageStore(UsageStoreContract):
    @pytest.fixture
    def store(self) -> UsageStore:
        return InMemoryUsageStore()


class TestInMemoryAuditLog(AuditLogContract):
    @pytest.fixture
    def log(self) -> AuditLog:
        return InMemoryAuditLog()


@pytest.fixture
async def sqlite_runs(tmp_path: Path) -> AsyncIterator[SqliteRunStore]:
    runs = await SqliteRunStore.open(str(tmp_path / "db" / "sophos.db"))
    yield runs
    await runs.aclose()


class TestSqliteUsageStore(UsageStoreContract):
    @pytest.fixture
    def store(self, sqlite_runs: SqliteRunStore) -> UsageStore:
        return SqliteUsageStore(*sqlite_runs.workers())


class TestSqliteAuditLog(AuditLogContract):
    @pytest.fixture
    def log(self, sqlite_runs: SqliteRunStore) -> AuditLog:
        return SqliteAuditLog(*sqlite_runs.workers())


@pytest.fixture
async def pg_db(pg_url: str) -> AsyncIterator[PostgresDatabase]:
    db = PostgresDatabase(pg_url)
    yield db
    await db.close()


class TestPostgresUsageStore(UsageStoreContract):
    @pytest.fixture
    def store(self, pg_db: PostgresDatabase) -> UsageStore:
        return PostgresUsageStore(pg_db)


class TestPostgresAuditLog(AuditLogContract):
    @pytest.fixture
    def log(self, pg_db: PostgresDatabase) -> AuditLog:
        return PostgresAuditLog(pg_db)
