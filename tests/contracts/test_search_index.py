"""The SearchIndex contract, run against the in-memory index, the SQLite FTS5 index and the
PostgreSQL full-text index (whose messages are written by the real checkpointers,
checkpoint by checkpoint)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata, empty_checkpoint

from adapters.langchain.messages import to_langchain
from adapters.langgraph.branching import with_op
from adapters.memory.runs import InMemoryRunStore
from adapters.memory.search import InMemorySearchIndex
from adapters.postgres.database import PostgresDatabase
from adapters.postgres.runs import PostgresRunStore
from adapters.postgres.saver import FencedPostgresSaver
from adapters.postgres.search import PostgresSearchIndex
from adapters.postgres.search_text import terms
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.saver import ThreadedSqliteSaver
from adapters.sqlite.search import SqliteSearchIndex
from domain.attachments import Attachment, parse_upload
from domain.errors import InvalidInput, SearchBusy
from domain.model import AssistantMessage, Message, ToolCall, ToolResult, UserMessage, new_id, utc_now
from domain.search import parse_query
from ports.runs import RunRepository
from ports.search import MARK_CLOSE, MARK_OPEN, SearchHit, SearchIndex, Unsearched
from tests.support.fake_engine import FakeEngine, Thread
from tests.support.files import png


class World(Protocol):
    index: SearchIndex
    runs: RunRepository

    async def append(self, cid: str, messages: Sequence[Message]) -> None: ...

    async def delete(self, cid: str) -> None: ...


class MemoryWorld:
    def __init__(self) -> None:
        self.runs = InMemoryRunStore()
        self.engine = FakeEngine(self.runs)
        self.index: SearchIndex = InMemorySearchIndex(self.runs, self.engine)

    async def append(self, cid: str, messages: Sequence[Message]) -> None:
        self.engine.threads.setdefault(cid, Thread()).messages.extend(messages)

    async def delete(self, cid: str) -> None:
        await self.engine.delete_thread(cid)
        await self.runs.delete_conversation(cid)


def next_checkpoint(
    threads: dict[str, list[Message]], cid: str, messages: Sequence[Message], fork: int | None = None
) -> tuple[RunnableConfig, Checkpoint, CheckpointMetadata]:
    """One more checkpoint of the thread, holding every message so far (as LangGraph's);
    `fork`: the first of a new branch, the messages before that index kept (an edit, a
    regenerate), as the engine asks for it."""
    thread = threads.setdefault(cid, [])
    if fork is not None:
        del thread[fork:]
    thread.extend(messages)
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": [to_langchain(m) for m in thread]}
    config: RunnableConfig = {"configurable": {"thread_id": cid, "checkpoint_ns": ""}}
    if fork is not None:
        config = with_op(config, {"op": "fork", "at": fork, "next": []})
    return config, checkpoint, {"source": "loop", "step": len(thread), "parents": {}}


class SqliteWorld:
    def __init__(self, runs: SqliteRunStore, path: str) -> None:
        self.runs = runs
        self.saver = ThreadedSqliteSaver.open(path)
        self.sqlite_index = SqliteSearchIndex(path, self.saver.reindex)
        self.index: SearchIndex = self.sqlite_index
        self.threads: dict[str, list[Message]] = {}

    async def append(self, cid: str, messages: Sequence[Message], fork: int | None = None) -> None:
        await self.saver.aput(*next_checkpoint(self.threads, cid, messages, fork), {})

    async def delete(self, cid: str) -> None:
        await self.saver.adelete_thread(cid)
        await self.runs.delete_conversation(cid)

    def close(self) -> None:
        self.sqlite_index.close()
        self.saver.close()


class PostgresWorld:
    def __init__(self, url: str) -> None:
        self.db = PostgresDatabase(url)
        self.saver = FencedPostgresSaver(self.db)  # versions every channel: blobs, as in a real run
        self.runs = PostgresRunStore(self.db)
        self.index: SearchIndex = PostgresSearchIndex(self.db, self.saver.reindex, self.saver.index_missing)
        self.threads: dict[str, list[Message]] = {}
        self.versions: dict[str, int] = {}

    async def append(self, cid: str, messages: Sequence[Message], fork: int | None = None) -> None:
        config, checkpoint, metadata = next_checkpoint(self.threads, cid, messages, fork)
        self.versions[cid] = self.versions.get(cid, 0) + 1
        checkpoint["channel_versions"] = {"messages": f"{self.versions[cid]:032}"}
        await self.saver.aput(config, checkpoint, metadata, checkpoint["channel_versions"])

    async def delete(self, cid: str) -> None:
        await self.saver.adelete_thread(cid)
        await self.runs.delete_conversation(cid)


async def search(world: World, q: str, limit: int = 50, offset: int = 0) -> list[SearchHit]:
    return list(await world.index.search(parse_query(q), limit, offset))


def where(hits: Sequence[SearchHit]) -> set[tuple[str, int | None]]:
    return {(h.conversation_id, h.message_index) for h in hits}


class SearchIndexContract:
    async def conversation(self, world: World, title: str, *texts: str) -> str:
        """A conversation whose thread alternates user and assistant messages."""
        cid = new_id()
        await world.runs.create_conversation(cid, title, utc_now())
        messages = [UserMessage(t, id=new_id()) if i % 2 == 0 else AssistantMessage(t, id=new_id()) for i, t in enumerate(texts)]
        if messages:
            await world.append(cid, messages)
        return cid

    async def test_a_user_message_is_found_by_the_names_of_its_files(self, world: World) -> None:
        cid = new_id()
        await world.runs.create_conversation(cid, "Numbers", utc_now())
        files = (Attachment("budget-2027.csv", "text/csv", 3, "a" * 64), Attachment("team photo.png", "image/png", 9, "b" * 64))
        await world.append(
            cid, [UserMessage("see attached", id=new_id(), attachments=files), AssistantMessage("ok", id=new_id())]
        )
        assert where(await search(world, "budget")) == {(cid, 0)}
        assert where(await search(world, '"team photo"')) == {(cid, 0)}
        assert where(await search(world, "attached")) == {(cid, 0)}

    async def test_a_word_finds_every_title_and_message_that_contains_it(self, world: World) -> None:
        a = await self.conversation(world, "Whale songs", "do whales sing?", "Humpback WHALES do.")
        b = await self.conversation(world, "Cooking", "a recipe for soup", "Here is one: whale-free soup")
        await self.conversation(world, "Other", "nothing here")
        hits = await search(world, '"whales"')  # quoted: that word only
        assert where(hits) == {(a, 0), (a, 1)}
        assert where(await search(world, '"whale"')) == {(a, None), (b, 1)}
        assert all(h.title in ("Whale songs", "Cooking") for h in await search(world, "whale"))
        assert {h.role for h in await search(world, "whale songs")} == {"title"}

    async def test_a_word_finds_its_other_forms_and_the_last_word_its_start(self, world: World) -> None:
        """As the page searches while a word is typed: `lighthous` finds "lighthouse"."""
        a = await self.conversation(
            world,
            "Coast",
            "The lighthouse keepers",
            "Lighthouses are kept by a keeper",
            "running the light",
            "she runs",
            "a lighthousekeeper's log",
        )
        b = await self.conversation(world, "Lighthouse keeping", "nothing to see")
        assert where(await search(world, "lighthous")) == {(a, 0), (a, 1), (a, 4), (b, None)}
        assert where(await search(world, "lighthouses")) == {(a, 0), (a, 1), (b, None)}  # as typed, or its stem
        assert where(await search(world, "keeper lighthous")) == {(a, 0), (a, 1)}  # keepers, keeper
        assert where(await search(world, "keepers lighthouse ke")) == {(a, 0), (a, 1)}
        assert where(await search(world, "keepers lighthouse k")) == set()  # one letter: that word only
        assert where(await search(world, "lighthouses keep")) == {(a, 0), (a, 1), (b, None)}
        assert where(await search(world, "running she")) == {(a, 3)}  # runs
        assert where(await search(world, "keepers ru")) == set()
        assert where(await search(world, '"lighthouse kee')) == {(a, 0), (b, None)}  # a quote being typed
        assert where(await search(world, '"lighthouse"')) == {(a, 0), (b, None)}  # quoted: that word only
        hit = next(h for h in await search(world, "keeper lighthouses") if h.message_index == 1)
        assert hit.snippet == f"{MARK_OPEN}Lighthouses{MARK_CLOSE} are kept by a {MARK_OPEN}keeper{MARK_CLOSE}"

    async def test_any_text_is_a_query_or_a_clear_error_never_a_failure_of_the_index(self, world: World) -> None:
        cid = await self.conversation(world, "t", "NEAR the café, 東京タワー at 3.14 o'clock: x-ray AND OR")
        hostile = [
            "NEAR(a b)",
            '"x" OR y',
            "a:b",
            "^c",
            "-d",
            "+e",
            "{f}",
            "(g",
            "h)",
            "i'j",
            "東京タワ",
            "café*",
            '"k l',
            "x-ra",
            "AND",
            "OR NOT",
            "near/3",
            '""',
            "'",
            "\\",
            "$%&",
            "3.1",
            "o'clo",
        ]
        for q in hostile:
            try:
                query = parse_query(q)
            except InvalidInput:
                continue
            await world.index.search(query, 20, 0)
        assert where(await search(world, "東京タワ")) == {(cid, 0)}
        assert where(await search(world, "x-ra")) == where(await search(world, "o'clo")) == {(cid, 0)}
        assert where(await search(world, "AND OR")) == where(await search(world, "cafe")) == {(cid, 0)}

    async def test_a_search_for_one_owner_finds_only_their_conversations(self, world: World) -> None:
        mine = await self.conversation(world, "t", "narwhal tusks")
        theirs = new_id()
        await world.runs.create_conversation(theirs, "narwhal facts", utc_now(), owner="u_00000000000000bb")
        await world.append(theirs, [UserMessage("narwhal narwhal", id=new_id())])
        assert where(await search(world, "narwhal")) == {(mine, 0), (theirs, None), (theirs, 0)}
        ranked = list(await world.index.search(parse_query("narwhal"), 1, 0, "admin"))
        assert where(ranked) == {(mine, 0)}  # the other user's better matches neither show nor rank
        assert where(await world.index.search(parse_query("narwhal"), 50, 0, "u_00000000000000bb")) == {
            (theirs, None),
            (theirs, 0),
        }
        assert list(await world.index.search(parse_query("narwhal"), 50, 0, "u_00000000000000cc")) == []

    async def test_every_term_must_be_in_the_same_entry(self, world: World) -> None:
        a = await self.conversation(world, "t", "blue sky", "red sea", "blue sea")
        assert where(await search(world, "blue sea")) == {(a, 2)}
        assert await search(world, "blue green") == []

    async def test_a_phrase_matches_consecutive_words_only(self, world: World) -> None:
        a = await self.conversation(world, "t", "the blue whale swims", "a whale, blue and big")
        assert where(await search(world, '"blue whale"')) == {(a, 0)}
        assert where(await search(world, "whale-blue")) == {(a, 1)}  # as the phrase "whale blue"

    async def test_a_prefix_matches_the_start_of_a_word(self, world: World) -> None:
        a = await self.conversation(world, "t", "deployment failed", "redeploy it", "we deploy")
        assert where(await search(world, "deploy*")) == {(a, 0), (a, 2)}
        assert where(await search(world, '"we dep"*')) == {(a, 2)}

    async def test_matches_are_marked_in_the_snippet(self, world: World) -> None:
        await self.conversation(world, "t", "Krill are tiny crustaceans that whales eat")
        (hit,) = await search(world, "whales kril*")
        assert f"{MARK_OPEN}whales{MARK_CLOSE}" in hit.snippet
        assert f"{MARK_OPEN}Krill{MARK_CLOSE}".lower() in hit.snippet.lower()
        assert hit.snippet.count(MARK_OPEN) == hit.snippet.count(MARK_CLOSE) == 2

    async def test_message_index_counts_messages_as_the_detail_lists_them(self, world: World) -> None:
        cid = await self.conversation(world, "t")
        call = ToolCall(new_id(), "lookup", {"q": "x"})
        await world.append(
            cid,
            [
                UserMessage("find the zebra", id=new_id()),
                AssistantMessage("", (call,), id=new_id()),
                ToolResult("zebra facts from a tool", call.id, "lookup", id=new_id()),
                AssistantMessage("the zebra is striped", id=new_id()),
            ],
        )
        await world.append(cid, [UserMessage("and the okapi zebra?", id=new_id())])
        hits = await search(world, "zebra")
        assert where(hits) == {(cid, 0), (cid, 3), (cid, 4)}  # the tool result (2) is not indexed
        assert {h.role for h in hits} == {"user", "assistant"}

    async def test_a_renamed_conversation_is_found_by_its_new_title_only(self, world: World) -> None:
        cid = await self.conversation(world, "Old name", "hello")
        await world.runs.rename_conversation(cid, "Fresh title", utc_now())
        assert await search(world, "old") == []
        hits = await search(world, "fresh")
        assert where(hits) == {(cid, None)} and hits[0].title == "Fresh title"

    async def test_a_deleted_conversation_is_no_longer_found(self, world: World) -> None:
        gone = await self.conversation(world, "Gannet", "gannets dive")
        kept = await self.conversation(world, "Gannet too", "gannets fly")
        await world.delete(gone)
        assert {h.conversation_id for h in await search(world, "gannet*")} == {kept}

    async def test_offsets_page_through_every_match_once_best_first(self, world: World) -> None:
        cid = await self.conversation(world, "t", *[f"otter {'otter ' * (i % 3)}number {i}" for i in range(7)])
        everything = await search(world, "otter")
        pages = [await search(world, "otter", 3, offset) for offset in (0, 3, 6)]
        assert [h for page in pages for h in page] == everything
        assert len(everything) == 7 and where(everything) == {(cid, i) for i in range(7)}
        assert everything[0].message_index in (2, 5)  # the densest entries rank first

    async def test_rebuild_writes_the_same_index_again(self, world: World) -> None:
        cid = await self.conversation(world, "Puffins", "puffins nest", "on cliffs")
        before = await search(world, "puffin*")
        assert await world.index.rebuild() == 3
        assert await world.index.rebuild() == 3
        assert await search(world, "puffin*") == before and where(before) == {(cid, None), (cid, 0)}


class FileTextSearch:
    """On the stores whose checkpointer writes the index: a file's text is indexed with the
    message that carries it, in the transaction that stores the file (or a later one)."""

    async def test_a_user_message_is_found_by_its_files_text(self, world: Any) -> None:
        cid = new_id()
        await world.runs.create_conversation(cid, "Files", utc_now())
        f = parse_upload("notes.txt", "text/plain", b"the zeppelin manifest, page two")
        image = parse_upload("dot.png", "image/png", png())
        world.saver.stage_files(cid, [f, image])
        await world.append(
            cid,
            [UserMessage("see", id=new_id(), attachments=(f.attachment, image.attachment)), AssistantMessage("ok", id=new_id())],
        )
        assert where(await search(world, "zeppelin manifest")) == {(cid, 0)}
        assert where(await search(world, "notes")) == {(cid, 0)}
        await world.append(cid, [UserMessage("more", id=new_id()), AssistantMessage("fine", id=new_id())])
        assert where(await search(world, "zeppelin")) == {(cid, 0)}  # indexed once, kept

    async def test_a_thread_that_begins_with_earlier_files_is_found_by_each_files_text(self, world: Any) -> None:
        """A fork or an import: the thread's first checkpoint holds messages with files."""
        cid = new_id()
        await world.runs.create_conversation(cid, "Copied", utc_now())
        first = parse_upload("log.txt", "text/plain", b"the albatross timetable")
        second = parse_upload("plan.md", "text/markdown", b"# the heron itinerary")
        world.saver.stage_files(cid, [first, second])
        await world.append(
            cid,
            [
                UserMessage("one", id=new_id(), attachments=(first.attachment,)),
                AssistantMessage("ok", id=new_id()),
                UserMessage("two", id=new_id(), attachments=(second.attachment,)),
                AssistantMessage("fine", id=new_id()),
            ],
        )
        assert where(await search(world, "albatross")) == {(cid, 0)}
        assert where(await search(world, "heron")) == {(cid, 2)}


class BranchSearch:
    """On the stores that keep branches: the index holds the active branch, and says how
    many inactive branches (in how many conversations) a search does not look in."""

    async def test_only_the_active_branch_is_searched_and_the_others_are_counted(self, world: Any) -> None:
        cid = await SearchIndexContract().conversation(world, "Birds", "tell me about herons", "herons wade")
        other = await SearchIndexContract().conversation(world, "More", "and egrets?")
        assert await world.index.unsearched() == Unsearched(0, 0)
        await world.append(cid, [AssistantMessage("egrets wade too", id=new_id())], fork=1)  # a regenerate
        assert where(await search(world, "egrets")) == {(cid, 1), (other, 0)}
        assert where(await search(world, "herons wade")) == set()  # the first answer is on branch 1 now
        await world.append(cid, [UserMessage("and storks?", id=new_id())], fork=0)  # an edit
        assert await world.index.unsearched() == Unsearched(2, 1)
        assert await world.index.unsearched("admin") == Unsearched(2, 1)
        assert await world.index.unsearched("u_00000000000000bb") == Unsearched(0, 0)


class TestInMemorySearchIndex(SearchIndexContract):
    @pytest.fixture
    def world(self) -> MemoryWorld:
        return MemoryWorld()


class TestSqliteSearchIndex(SearchIndexContract, FileTextSearch, BranchSearch):
    @pytest.fixture
    async def world(self, tmp_path: Path) -> AsyncIterator[SqliteWorld]:
        path = str(tmp_path / "sophos.db")
        runs = await SqliteRunStore.open(path)
        world = SqliteWorld(runs, path)
        yield world
        world.close()
        await runs.aclose()

    async def test_a_search_past_its_budget_is_refused_and_the_reader_goes_on(self, world: SqliteWorld) -> None:
        from adapters.sqlite.search import _search

        for _ in range(20):  # more matching rows than the progress handler's steps
            await SearchIndexContract().conversation(world, "budget", *(["alpha beta " * 50] * 60))
        with pytest.raises(InvalidInput, match="took over 0 s: narrow it"):
            world.sqlite_index._worker.call(_search, parse_query("alpha"), 20, 0, 0.0)
        assert world.sqlite_index._worker.call(_search, parse_query("nothing"), 20, 0) == []

    async def test_searches_beyond_those_waiting_are_refused_not_queued(self, world: SqliteWorld) -> None:
        from adapters.sqlite.search import MAX_WAITING

        index = world.sqlite_index
        held = asyncio.ensure_future(index._worker.run(lambda conn: time.sleep(1.0)))  # the reader is busy
        queued = [asyncio.ensure_future(index.search(parse_query("word"), 20, 0)) for _ in range(MAX_WAITING + 1)]
        await asyncio.sleep(0.1)
        with pytest.raises(SearchBusy):
            await index.search(parse_query("word"), 20, 0)
        await held
        assert [list(r) for r in await asyncio.gather(*queued)] == [[]] * (MAX_WAITING + 1)


class TestPostgresSearchIndex(SearchIndexContract, FileTextSearch, BranchSearch):
    @pytest.fixture
    async def world(self, pg_url: str) -> AsyncIterator[PostgresWorld]:
        world = PostgresWorld(pg_url)
        yield world
        await world.runs.aclose()

    async def test_postgresql_keeps_every_word_as_sophos_splits_it(self, world: PostgresWorld) -> None:
        text = "1e5 0x1f v1.2 007 3rd naïve Straße 東京タワー Ωmega x²y ١٢٣ a_b e-mail me@x.org /usr/bin"
        async with world.db.cursor() as cur:
            await cur.execute("SELECT lexeme, positions FROM unnest(to_tsvector('simple', %s))", (terms(text),))
            lexemes = {word: list(positions) for word, positions in await cur.fetchall()}
        expected: dict[str, list[int]] = {}
        for position, word in enumerate(terms(text).split(), 1):
            expected.setdefault(word, []).append(position)
        assert lexemes == expected

    async def test_a_message_of_distinct_words_past_the_cap_is_indexed_words_and_stems(self, world: PostgresWorld) -> None:
        """The worst case for the two tsvectors (every word distinct, each with its stem):
        both stay under PostgreSQL's 1 MB, the words past the cap are not indexed."""
        from itertools import product
        from string import ascii_lowercase

        from adapters.postgres.search_text import MAX_TERMS_BYTES

        distinct = ("".join(p) + "ing" for n in (2, 3, 4) for p in product(ascii_lowercase, repeat=n))
        text = " ".join(next(distinct) for _ in range(MAX_TERMS_BYTES // 6 + 2000))
        cid = await SearchIndexContract().conversation(world, "huge", text)
        assert where(await search(world, "aaing")) == {(cid, 0)}  # "aa", the stem, and the word typed
        assert where(await search(world, '"aaing"')) == {(cid, 0)}
        assert await search(world, text.split()[-1]) == []  # past the cap
