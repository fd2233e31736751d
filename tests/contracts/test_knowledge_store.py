"""The KnowledgeStore contract (issue 45 item 3: each user's collections, their files'
passages and full-text index, replaced and deleted together), run against every adapter
(memory, SQLite, PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.memory.knowledge import InMemoryKnowledge
from adapters.postgres.database import PostgresDatabase
from adapters.postgres.knowledge import PostgresKnowledge
from adapters.sqlite.knowledge import SqliteKnowledge
from adapters.sqlite.runs import SqliteRunStore
from domain.knowledge import Chunk, KnowledgeFile
from domain.model import new_id
from ports.knowledge import KnowledgeStore

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
LIGHTHOUSE = [Chunk(1, 3, "The lighthouse keeper climbs the stairs."), Chunk(4, 9, "Bread is baked at dawn.")]


def file(name: str, digest: str = "d1", passages: int = 2) -> KnowledgeFile:
    return KnowledgeFile(name, digest, 100, "text/markdown", passages, T0)


class KnowledgeContract:
    @pytest.fixture
    def store(self) -> KnowledgeStore:
        raise NotImplementedError

    async def test_a_file_put_in_a_collection_is_listed_and_found_by_its_words(self, store: KnowledgeStore) -> None:
        ann = new_id()
        assert await store.create(ann, "docs", T0)
        assert not await store.create(ann, "docs", T0)
        assert await store.put_file(ann, "docs", file("guide.md"), LIGHTHOUSE)
        [c] = await store.collections(ann)
        assert (c.name, c.files, c.passages, c.created_at) == ("docs", 1, 2, T0)
        [f] = await store.files(ann, "docs") or []
        assert (f.name, f.digest, f.passages) == ("guide.md", "d1", 2)
        found = await store.search(ann, ["docs"], "who keeps the lighthouses?", 10)
        assert [(x.collection, x.file, x.first, x.last) for x in found] == [("docs", "guide.md", 1, 3)]
        assert found[0].score > 0 and found[0].text == LIGHTHOUSE[0].text
        assert await store.search(ann, ["docs"], "?!", 10) == []
        assert await store.search(ann, ["other"], "lighthouse", 10) == []
        assert list(await store.chunks(ann, "docs", "guide.md") or []) == LIGHTHOUSE

    async def test_another_users_collection_is_an_unknown_one(self, store: KnowledgeStore) -> None:
        ann, bob = new_id(), new_id()
        await store.create(ann, "docs", T0)
        await store.put_file(ann, "docs", file("guide.md"), LIGHTHOUSE)
        assert await store.collections(bob) == []
        assert await store.files(bob, "docs") is None
        assert await store.chunks(bob, "docs", "guide.md") is None
        assert await store.search(bob, ["docs"], "lighthouse", 10) == []
        assert not await store.put_file(bob, "docs", file("evil.md"), LIGHTHOUSE)
        assert not await store.delete_file(bob, "docs", "guide.md")
        assert not await store.drop(bob, "docs")
        assert await store.create(bob, "docs", T0)  # bob's own, beside ann's
        assert await store.search(bob, ["docs"], "lighthouse", 10) == []
        assert len(await store.search(ann, ["docs"], "lighthouse", 10)) == 1

    async def test_a_replaced_file_is_found_by_its_new_words_only(self, store: KnowledgeStore) -> None:
        ann = new_id()
        await store.create(ann, "docs", T0)
        await store.put_file(ann, "docs", file("guide.md"), LIGHTHOUSE)
        assert await store.put_file(ann, "docs", file("guide.md", "d2", 1), [Chunk(1, 1, "Tides and harbours.")])
        assert await store.search(ann, ["docs"], "lighthouse bread", 10) == []
        assert [x.text for x in await store.search(ann, ["docs"], "harbour", 10)] == ["Tides and harbours."]
        [f] = await store.files(ann, "docs") or []
        assert (f.digest, f.passages) == ("d2", 1)

    async def test_a_deleted_file_or_collection_takes_its_passages_with_it(self, store: KnowledgeStore) -> None:
        ann = new_id()
        await store.create(ann, "docs", T0)
        await store.create(ann, "more", T0)
        await store.put_file(ann, "docs", file("a.md"), LIGHTHOUSE)
        await store.put_file(ann, "docs", file("b.md"), [Chunk(1, 1, "harbour lights")])
        await store.put_file(ann, "more", file("c.md"), [Chunk(1, 1, "harbour walls")])
        assert await store.delete_file(ann, "docs", "a.md")
        assert not await store.delete_file(ann, "docs", "a.md")
        assert await store.search(ann, ["docs"], "lighthouse", 10) == []
        assert await store.drop(ann, "docs")
        assert await store.files(ann, "docs") is None
        assert [x.file for x in await store.search(ann, ["docs", "more"], "harbour", 10)] == ["c.md"]
        assert await store.create(ann, "docs", T0)  # a new collection of the old name starts empty
        assert await store.files(ann, "docs") == []
        assert await store.search(ann, ["docs"], "harbour lighthouse", 10) == []
        assert await store.drop_all(ann) == 2
        assert await store.collections(ann) == []
        assert await store.search(ann, ["more"], "harbour", 10) == []

    async def test_the_best_match_comes_first(self, store: KnowledgeStore) -> None:
        ann = new_id()
        await store.create(ann, "docs", T0)
        chunks = [Chunk(i, i, t) for i, t in enumerate(["bread and jam", "lighthouse lighthouse lamp", "a lamp"], start=1)]
        await store.put_file(ann, "docs", file("a.md"), chunks)
        found = await store.search(ann, ["docs"], "lighthouse lamp", 10)
        assert [x.first for x in found][0] == 2 and {x.first for x in found} == {2, 3}
        assert len(await store.search(ann, ["docs"], "lighthouse lamp", 1)) == 1


class TestInMemoryKnowledge(KnowledgeContract):
    @pytest.fixture
    def store(self) -> KnowledgeStore:
        return InMemoryKnowledge()


class TestSqliteKnowledge(KnowledgeContract):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[KnowledgeStore]:
        runs = await SqliteRunStore.open(str(tmp_path / "db" / "sophos.db"))
        yield SqliteKnowledge(*runs.workers())
        await runs.aclose()

    async def test_no_index_entry_outlives_its_passage(self, tmp_path: Path) -> None:
        runs = await SqliteRunStore.open(str(tmp_path / "db" / "sophos.db"))
        try:
            store, ann = SqliteKnowledge(*runs.workers()), new_id()
            await store.create(ann, "docs", T0)
            await store.put_file(ann, "docs", file("a.md"), LIGHTHOUSE)
            await store.put_file(ann, "docs", file("a.md", "d2"), LIGHTHOUSE)
            await store.drop(ann, "docs")
            check = "INSERT INTO knowledge_fts (knowledge_fts, rank) VALUES ('integrity-check', 1)"
            await runs.workers()[0].run(lambda c: c.execute(check))
            count = await runs.workers()[1].run(lambda c: c.execute("SELECT COUNT(*) FROM knowledge_chunks").fetchone())
            assert count == (0,)
        finally:
            await runs.aclose()


class TestPostgresKnowledge(KnowledgeContract):
    @pytest.fixture
    async def store(self, pg_url: str) -> AsyncIterator[KnowledgeStore]:
        db = PostgresDatabase(pg_url)
        yield PostgresKnowledge(db)
        await db.close()
