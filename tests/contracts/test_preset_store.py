"""The PresetStore contract (issue 48 item 12), run against every adapter (memory, SQLite,
PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from adapters.memory.presets import InMemoryPresetStore
from adapters.postgres.database import PostgresDatabase
from adapters.postgres.presets import PostgresPresetStore
from adapters.sqlite.presets import SqlitePresetStore
from adapters.sqlite.runs import SqliteRunStore
from domain.model import SystemMode, new_id
from domain.models import ChatSettings
from domain.presets import DEFAULT_NAME, Preset
from ports.presets import PresetStore

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def preset(
    name: str,
    model: str | None = "qwen3",
    system: str | None = "Be brief.",
    mode: SystemMode = SystemMode.ADD,
    seconds: float = 0,
) -> Preset:
    return Preset(name, ChatSettings(model, system, mode), T0 + timedelta(seconds=seconds))


class PresetStoreContract:
    @pytest.fixture
    def store(self) -> PresetStore:
        raise NotImplementedError

    async def test_a_user_without_presets_has_none(self, store: PresetStore) -> None:
        assert list(await store.presets(new_id())) == []

    async def test_presets_come_back_as_saved_the_default_first_then_by_name(self, store: PresetStore) -> None:
        user = new_id()
        saved = [
            preset("Writer", "llama3.2", "Write well.", SystemMode.REPLACE, 1),
            preset("Coder", None, None),
            preset(DEFAULT_NAME, "qwen3", "Answer in French.", seconds=2),
        ]
        for p in saved:
            assert await store.put_preset(user, p, 10)
        assert list(await store.presets(user)) == [saved[2], saved[1], saved[0]]

    async def test_saving_a_name_again_replaces_that_preset(self, store: PresetStore) -> None:
        user = new_id()
        await store.put_preset(user, preset("Writer"), 10)
        again = preset("Writer", "llama3.2", None, seconds=5)
        assert await store.put_preset(user, again, 10)
        assert list(await store.presets(user)) == [again]

    async def test_names_are_exact_and_each_users_own(self, store: PresetStore) -> None:
        ann, bob = new_id(), new_id()
        await store.put_preset(ann, preset("writer"), 10)
        await store.put_preset(ann, preset("Writer"), 10)
        await store.put_preset(bob, preset("Writer", "other"), 10)
        assert [p.name for p in await store.presets(ann)] == ["Writer", "writer"]  # code point order
        assert not await store.delete_preset(bob, "writer")
        assert await store.delete_preset(ann, "writer")
        assert [p.name for p in await store.presets(ann)] == ["Writer"]
        assert [p.settings.model for p in await store.presets(bob)] == ["other"]
        assert not await store.delete_preset(ann, "writer")

    async def test_a_new_name_past_the_limit_is_refused_but_a_known_one_and_the_default_are_saved(
        self, store: PresetStore
    ) -> None:
        user = new_id()
        assert await store.put_preset(user, preset("a"), 2)
        assert await store.put_preset(user, preset("b"), 2)
        assert not await store.put_preset(user, preset("c"), 2)
        assert await store.put_preset(user, preset("b", "llama3.2"), 2)
        assert await store.put_preset(user, preset(DEFAULT_NAME), 2)
        assert [p.name for p in await store.presets(user)] == [DEFAULT_NAME, "a", "b"]

    async def test_new_names_saved_at_once_never_pass_the_limit(self, store: PresetStore) -> None:
        user = new_id()
        done = await asyncio.gather(*(store.put_preset(user, preset(f"p{i}"), 3) for i in range(8)))
        assert sum(done) == 3
        assert len(await store.presets(user)) == 3


class TestInMemoryPresetStore(PresetStoreContract):
    @pytest.fixture
    def store(self) -> PresetStore:
        return InMemoryPresetStore()


class TestSqlitePresetStore(PresetStoreContract):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[PresetStore]:
        runs = await SqliteRunStore.open(str(tmp_path / "db" / "sophos.db"))
        yield SqlitePresetStore(*runs.workers())
        await runs.aclose()

    async def test_another_process_on_the_file_sees_a_saved_preset(self, tmp_path: Path) -> None:
        path = str(tmp_path / "db" / "sophos.db")
        one, two = await SqliteRunStore.open(path), await SqliteRunStore.open(path)
        try:
            user = new_id()
            await SqlitePresetStore(*one.workers()).put_preset(user, preset("Writer"), 10)
            assert [p.name for p in await SqlitePresetStore(*two.workers()).presets(user)] == ["Writer"]
        finally:
            await one.aclose()
            await two.aclose()


class TestPostgresPresetStore(PresetStoreContract):
    @pytest.fixture
    async def store(self, pg_url: str) -> AsyncIterator[PresetStore]:
        db = PostgresDatabase(pg_url)
        yield PostgresPresetStore(db)
        await db.close()
