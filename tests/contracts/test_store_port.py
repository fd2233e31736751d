"""The StorePort contract (issue 45 item 1: LangGraph's BaseStore semantics, each user's
namespaces their own), run against every adapter (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from adapters.memory.store import InMemoryStore
from adapters.postgres.database import PostgresDatabase
from adapters.postgres.store import PostgresStore
from adapters.sqlite.database import connect
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.store import SqliteStore, matches_sql, prefix_range
from adapters.sqlite.vectors import install, to_blob
from domain.errors import InvalidInput
from domain.model import new_id
from domain.ranking import cosine
from domain.store import ListNamespaces, PutItem, SearchItems
from ports.store import StorePort
from tests.support.embedding import concept_vector

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


class StoreContract:
    @pytest.fixture
    def store(self) -> StorePort:
        raise NotImplementedError

    async def test_a_put_item_comes_back_and_a_deleted_one_is_unknown(self, store: StorePort) -> None:
        ann = new_id()
        await store.put(ann, PutItem(("notes",), "k1", {"title": "Hello", "n": [1, {"x": None}]}), T0)
        got = await store.get(ann, ("notes",), "k1", at(1))
        assert got is not None
        assert (got.namespace, got.key, dict(got.value)) == (("notes",), "k1", {"title": "Hello", "n": [1, {"x": None}]})
        assert got.created_at == got.updated_at == T0
        assert await store.delete(ann, ("notes",), "k1")
        assert await store.get(ann, ("notes",), "k1", at(1)) is None
        assert not await store.delete(ann, ("notes",), "k1")

    async def test_a_put_again_replaces_the_value_and_keeps_created_at(self, store: StorePort) -> None:
        ann = new_id()
        await store.put(ann, PutItem(("a", "b"), "k", {"v": 1}), T0)
        await store.put(ann, PutItem(("a", "b"), "k", {"v": 2}), at(5))
        got = await store.get(ann, ("a", "b"), "k", at(6))
        assert got is not None and got.value == {"v": 2} and (got.created_at, got.updated_at) == (T0, at(5))
        assert [i.key for i in await store.search(ann, SearchItems(("a",)), at(6))] == ["k"]

    async def test_each_user_has_a_private_view_of_the_same_namespace(self, store: StorePort) -> None:
        ann, bob = new_id(), new_id()
        await store.put(ann, PutItem(("notes",), "k", {"text": "ann's secret lighthouse"}), T0)
        assert await store.get(bob, ("notes",), "k", T0) is None
        assert list(await store.search(bob, SearchItems(("notes",)), T0)) == []
        assert list(await store.search(bob, SearchItems((), query="lighthouse"), T0)) == []
        assert list(await store.list_namespaces(bob, ListNamespaces(), T0)) == []
        assert not await store.delete(bob, ("notes",), "k")
        await store.put(bob, PutItem(("notes",), "k", {"text": "bob's"}), T0)
        ann_item = await store.get(ann, ("notes",), "k", T0)
        assert ann_item is not None and ann_item.value == {"text": "ann's secret lighthouse"}
        bob_item = await store.get(bob, ("notes",), "k", T0)
        assert bob_item is not None and bob_item.value == {"text": "bob's"}

    async def test_search_keeps_the_prefix_and_the_filter_newest_first(self, store: StorePort) -> None:
        ann = new_id()
        await store.put(ann, PutItem(("docs", "x"), "1", {"kind": "alpha", "size": 3, "meta": {"lang": "en"}}), at(1))
        await store.put(ann, PutItem(("docs", "y"), "2", {"kind": "beta", "size": 7}), at(2))
        await store.put(ann, PutItem(("docs",), "3", {"kind": "alpha", "size": 10}), at(3))
        await store.put(ann, PutItem(("docsy",), "4", {"kind": "alpha"}), at(4))  # not under ("docs",)

        async def keys(q: SearchItems) -> list[str]:
            return [i.key for i in await store.search(ann, q, at(5))]

        assert await keys(SearchItems(("docs",))) == ["3", "2", "1"]
        assert await keys(SearchItems(("docs", "x"))) == ["1"]
        assert await keys(SearchItems(())) == ["4", "3", "2", "1"]
        assert await keys(SearchItems(("docs",), filter={"kind": "alpha"})) == ["3", "1"]
        assert await keys(SearchItems(("docs",), filter={"size": {"$gt": 3}})) == ["3", "2"]
        assert await keys(SearchItems(("docs",), filter={"size": {"$gte": 3, "$lt": 10}})) == ["2", "1"]
        assert await keys(SearchItems(("docs",), filter={"kind": {"$ne": "alpha"}})) == ["2"]
        assert await keys(SearchItems(("docs",), filter={"meta.lang": "en"})) == ["1"]
        assert await keys(SearchItems(("docs",), limit=1, offset=1)) == ["2"]
        assert await keys(SearchItems(("docs",), filter={"kind": "alpha"}, limit=1, offset=1)) == ["1"]

    async def test_a_query_finds_items_by_their_words_best_first(self, store: StorePort) -> None:
        ann = new_id()
        await store.put(ann, PutItem(("memories",), "a", {"text": "Ann keeps lighthouses in Cornwall"}), T0)
        await store.put(ann, PutItem(("memories",), "b", {"text": "Ann likes tea", "tags": ["lighthouse keeper"]}), T0)
        await store.put(ann, PutItem(("memories",), "c", {"text": "Nothing to see"}), T0)
        await store.put(ann, PutItem(("memories",), "d", {"text": "a hidden lighthouse"}, index=False), T0)
        found = await store.search(ann, SearchItems(("memories",), query="lighthouse Cornwall"), at(1))
        assert [i.key for i in found] == ["a", "b"]
        assert all(i.score is not None for i in found) and found[0].score > found[1].score  # type: ignore[operator]
        assert list(await store.search(ann, SearchItems(("memories",), query="?!"), at(1))) == []  # no word
        tea = SearchItems(("memories",), query="TEA", filter={"text": "Ann likes tea"})
        assert [i.key for i in await store.search(ann, tea, T0)] == ["b"]

    async def test_an_item_past_its_ttl_is_unknown_and_a_refreshing_read_extends_it(self, store: StorePort) -> None:
        ann = new_id()
        await store.put(ann, PutItem(("t",), "k", {"v": 1}, ttl_minutes=10), T0)
        await store.put(ann, PutItem(("t",), "forever", {"v": 2}), T0)
        assert await store.get(ann, ("t",), "k", at(9), refresh_ttl=True) is not None  # now lives to at(19)
        assert await store.get(ann, ("t",), "k", at(15)) is not None
        assert await store.get(ann, ("t",), "k", at(20)) is None
        assert [i.key for i in await store.search(ann, SearchItems(("t",)), at(20))] == ["forever"]
        assert list(await store.list_namespaces(ann, ListNamespaces(), at(20))) == [("t",)]

    async def test_list_namespaces_by_prefix_suffix_and_depth(self, store: StorePort) -> None:
        ann = new_id()
        for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("x", "b", "c"), ("ab",)]:
            await store.put(ann, PutItem(ns, "k", {"v": 1}), T0)

        async def listed(q: ListNamespaces) -> list[tuple[str, ...]]:
            return list(await store.list_namespaces(ann, q, T0))

        assert await listed(ListNamespaces()) == [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("ab",), ("x", "b", "c")]
        assert await listed(ListNamespaces(prefix=("a",))) == [("a", "b", "c"), ("a", "b", "d"), ("a", "e")]
        assert await listed(ListNamespaces(suffix=("c",))) == [("a", "b", "c"), ("x", "b", "c")]
        assert await listed(ListNamespaces(prefix=("*", "b"))) == [("a", "b", "c"), ("a", "b", "d"), ("x", "b", "c")]
        assert await listed(ListNamespaces(prefix=("a",), max_depth=2)) == [("a", "b"), ("a", "e")]
        assert await listed(ListNamespaces(limit=2, offset=1)) == [("a", "b", "d"), ("a", "e")]

    async def test_puts_at_once_of_one_key_leave_one_item(self, store: StorePort) -> None:
        ann = new_id()
        await asyncio.gather(*(store.put(ann, PutItem(("m",), "k", {"v": i}), at(i)) for i in range(8)))
        assert len(await store.search(ann, SearchItems(("m",)), at(10))) == 1

    # semantic search (EMBEDDING_MODEL): vectors given, as services.semantic_store gives them
    async def put_embedded(self, store: StorePort, owner: str, key: str, text: str, **kw: Any) -> None:
        await store.put(owner, PutItem(("mem",), key, {"text": text}, **kw), T0, concept_vector(text))

    async def test_a_query_with_a_vector_finds_by_meaning_what_shares_no_word(self, store: StorePort) -> None:
        ann = new_id()
        for key, text in [("c", "My red sedan is parked outside"), ("s", "The yacht leaves at dawn"), ("d", "Walk the puppy")]:
            await self.put_embedded(store, ann, key, text)
        assert list(await store.search(ann, SearchItems(("mem",), query="automobile"), T0)) == []  # no word in common
        found = await store.search(ann, SearchItems(("mem",), query="automobile"), T0, concept_vector("automobile"))
        assert [i.key for i in found][0] == "c" and all(i.score is not None and i.score > 0 for i in found)
        bob = new_id()
        assert list(await store.search(bob, SearchItems(("mem",), query="automobile"), T0, concept_vector("automobile"))) == []

    async def test_a_hybrid_query_ranks_first_what_both_rankings_find(self, store: StorePort) -> None:
        ann = new_id()
        for key, text in [("words", "a red sedan"), ("meaning", "the vessel sails away"), ("both", "red boat")]:
            await self.put_embedded(store, ann, key, text)
        query = SearchItems(("mem",), query="red ship")
        assert [i.key for i in await store.search(ann, query, T0, concept_vector("red ship"))][0] == "both"
        window = SearchItems(("mem",), query="red ship", limit=1, offset=1, filter={"text": {"$ne": "red boat"}})
        assert len(await store.search(ann, window, T0, concept_vector("red ship"))) == 1

    async def test_no_vector_is_kept_without_index_nor_compared_across_models(self, store: StorePort) -> None:
        ann = new_id()
        await self.put_embedded(store, ann, "hidden", "my sedan", index=False)
        await store.put(ann, PutItem(("mem",), "other", {"text": "my sedan"}), T0, concept_vector("my sedan", model="other"))
        await store.put(ann, PutItem(("mem",), "plain", {"text": "the puppy"}), T0)  # put without a vector
        found = await store.search(ann, SearchItems(("mem",), query="automobile"), T0, concept_vector("automobile"))
        assert list(found) == []
        found = await store.search(ann, SearchItems(("mem",), query="puppy"), T0, concept_vector("puppy"))
        assert [i.key for i in found] == ["plain"]  # by its words


class TestInMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> StorePort:
        return InMemoryStore()


class TestSqliteStore(StoreContract):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[StorePort]:
        runs = await SqliteRunStore.open(str(tmp_path / "db" / "sophos.db"))
        yield SqliteStore(*runs.workers())
        await runs.aclose()

    async def test_a_query_reads_the_full_text_index_first(self, tmp_path: Path) -> None:
        runs = await SqliteRunStore.open(str(tmp_path / "db" / "sophos.db"))
        await runs.aclose()
        conn = connect(str(tmp_path / "db" / "sophos.db"))
        where, bounds = prefix_range(("docs",))
        plan = conn.execute("EXPLAIN QUERY PLAN " + matches_sql(where, " LIMIT 10"), ('"x"', "ann", *bounds, "now")).fetchall()
        conn.close()
        steps = [row[3] for row in plan]
        assert steps[0].startswith("SCAN store_fts") and "rowid=?" in steps[1], steps  # not once per item

    def test_vectors_are_compared_by_vec_distance_cosine_with_or_without_the_extension(self) -> None:
        a, b = concept_vector("my sedan"), concept_vector("a red automobile")
        for how in ("loaded", "python"):
            conn = sqlite3.connect(":memory:")
            if how == "python":  # a CPython that cannot load extensions (this project's machines)
                conn = PlainConnection(":memory:")
            install(conn)
            got = conn.execute(
                "SELECT vec_distance_cosine(?, ?), vec_distance_cosine(?, ?)",
                (to_blob(a.values), to_blob(b.values), to_blob(a.values), None),
            ).fetchone()
            conn.close()
            assert got[0] == pytest.approx(1 - cosine(a.values, b.values), abs=1e-6) and got[1] is None

    async def test_another_process_on_the_file_sees_a_put_item(self, tmp_path: Path) -> None:
        path = str(tmp_path / "db" / "sophos.db")
        one, two = await SqliteRunStore.open(path), await SqliteRunStore.open(path)
        try:
            ann = new_id()
            await SqliteStore(*one.workers()).put(ann, PutItem(("n",), "k", {"v": 1}), T0)
            assert await SqliteStore(*two.workers()).get(ann, ("n",), "k", T0) is not None
        finally:
            await one.aclose()
            await two.aclose()


class PlainConnection(sqlite3.Connection):
    enable_load_extension = property()  # hasattr() is False, as on a CPython built without it


class TestPostgresStore(StoreContract):
    @pytest.fixture
    async def store(self, pg_url: str) -> AsyncIterator[StorePort]:
        db = PostgresDatabase(pg_url)
        yield PostgresStore(db)
        await db.close()


# the domain's checks: no backend is involved, so once, not per store
def test_bad_namespaces_keys_and_values_are_refused_before_the_store() -> None:
    for bad in [
        lambda: PutItem((), "k", {}),
        lambda: PutItem(("a.b",), "k", {}),
        lambda: PutItem(("",), "k", {}),
        lambda: PutItem(("a",), "", {}),
        lambda: PutItem(("a",), "k", {"v": "\x00"}),
        lambda: PutItem(("a",), "k", {"v": float("nan")}),
        lambda: PutItem(("a",), "k", {}, ttl_minutes=-1),
        lambda: SearchItems(("a",), limit=0),
        lambda: SearchItems(("a",), filter={"v": {"$regex": "x"}}),
        lambda: ListNamespaces(max_depth=0),
    ]:
        with pytest.raises(InvalidInput):
            bad()
