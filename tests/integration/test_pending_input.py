"""A new message on a thread that has answered is saved as pending input on its latest
checkpoint (adapters.langgraph.engine): whatever stops its run before the agent's
checkpoint (a model failure, a stop, an edit) keeps the message, once, and the thread
stays resumable from it. Over LangGraph's in-memory saver and our SQLite saver."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.memory.saver import InMemoryThreadSaver
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.saver import ThreadedSqliteSaver
from domain.commands import Cancel, start_command
from domain.errors import ModelUnavailable
from domain.model import RunStatus
from tests.support.harness import Harness, make_harness


@pytest.fixture
def sqlite_backend(tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    path = str(tmp_path / "sophos.db")
    store, saver = SqliteRunStore(path), ThreadedSqliteSaver.open(path)
    yield store, saver
    saver.close()
    store.close()


@pytest.fixture(params=["memory", "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    if request.param == "memory":
        yield None, InMemoryThreadSaver()
    else:
        yield request.getfixturevalue("sqlite_backend")


def harness(backend: tuple[Any, Any], replies: list[Any], delay: float = 0.0) -> Harness:
    store, saver = backend
    return make_harness(replies, repo=store, saver=saver, delay=delay)


async def contents(h: Harness, cid: str) -> list[str]:
    return [m.content for m in (await h.conversations.get(cid)).messages]


async def test_a_failed_turn_keeps_its_message_and_a_resume_answers_it_once(backend: tuple[Any, Any]) -> None:
    h = harness(backend, ["first", ModelUnavailable(), "second answer"])
    started, _ = await h.send("one")
    cid = started.conversation_id
    _, events = await h.send("two", cid)
    assert events[-1].event == "chat-error"
    detail = await h.conversations.get(cid)
    assert [m.content for m in detail.messages] == ["one", "first", "two"]
    assert detail.resumable and detail.conversation.message_count == 3
    assert detail.conversation.status is RunStatus.FAILED
    events = await h.resume(cid)
    assert events[-1].data["status"] == "completed"
    assert await contents(h, cid) == ["one", "first", "two", "second answer"]
    assert [m.content for m in h.model.seen[-1].messages] == ["one", "first", "two"]
    assert not (await h.conversations.get(cid)).resumable


async def test_a_new_message_after_a_failed_turn_keeps_both(backend: tuple[Any, Any]) -> None:
    h = harness(backend, ["first", ModelUnavailable(), "answer to both"])
    started, _ = await h.send("one")
    cid = started.conversation_id
    await h.send("two", cid)
    _, events = await h.send("three", cid)
    assert events[-1].data["status"] == "completed"
    assert await contents(h, cid) == ["one", "first", "two", "three", "answer to both"]
    assert [m.content for m in h.model.seen[-1].messages] == ["one", "first", "two", "three"]
    assert (await h.conversations.summary(cid)).message_count == 5


async def test_a_stop_mid_answer_keeps_the_message_and_the_text_and_a_resume_goes_on(backend: tuple[Any, Any]) -> None:
    h = harness(backend, ["first", "word " * 200, "the rest"], delay=0.01)
    started, _ = await h.send("one")
    cid = started.conversation_id
    await h.runs.start(start_command("two", cid))
    await asyncio.sleep(0.2)
    assert (await h.runs.cancel(Cancel(cid))).status is RunStatus.CANCELLED
    detail = await h.conversations.get(cid)
    kept = detail.messages[-1].content
    assert [m.content for m in detail.messages[:3]] == ["one", "first", "two"] and len(detail.messages) == 4
    assert kept.startswith("word word") and len(kept) < len("word " * 200)
    assert detail.resumable and detail.conversation.message_count == 4
    events = await h.resume(cid)
    assert events[-1].data["status"] == "completed"
    assert await contents(h, cid) == ["one", "first", "two", kept, "the rest"]


async def test_a_stop_before_the_first_token_keeps_the_message_once(backend: tuple[Any, Any]) -> None:
    h = harness(backend, ["first", "late words", "answer to both"], delay=0.5)
    started, _ = await h.send("one")
    cid = started.conversation_id
    await h.runs.start(start_command("two", cid))
    await asyncio.sleep(0.1)
    assert (await h.runs.cancel(Cancel(cid))).status is RunStatus.CANCELLED
    detail = await h.conversations.get(cid)
    assert [m.content for m in detail.messages] == ["one", "first", "two"]
    assert detail.resumable and detail.conversation.message_count == 3
    _, events = await h.send("three", cid)
    assert events[-1].data["status"] == "completed"
    assert await contents(h, cid) == ["one", "first", "two", "three", "answer to both"]


async def test_an_edit_of_the_failed_message_forks_and_keeps_the_original(sqlite_backend: tuple[Any, Any]) -> None:
    # branches are stored by our savers (adapters.sqlite.branches), not by LangGraph's in-memory one
    h = harness(sqlite_backend, ["first", ModelUnavailable(), "edited answer"])
    started, _ = await h.send("one")
    cid = started.conversation_id
    await h.send("two", cid)
    failed = (await h.conversations.get(cid)).messages[-1]
    assert failed.content == "two" and failed.id
    edit = await h.runs.start(start_command("two, better", cid, edit_of=2))
    events = await h.events_of(edit)
    assert events[-1].data["status"] == "completed"
    detail = await h.conversations.get(cid)
    assert [m.content for m in detail.messages] == ["one", "first", "two, better", "edited answer"]
    assert len(detail.branches) == 2 and detail.active_branch == 2
    original = await h.conversations.switch_branch(cid, 1)
    assert [m.content for m in original.messages] == ["one", "first", "two"] and original.resumable


def entries(path: str, cid: str) -> list[tuple[int, str, str]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT message_index, role, body FROM search_entries WHERE conversation_id = ? "
            "AND message_index IS NOT NULL ORDER BY message_index",
            (cid,),
        ).fetchall()
        return [tuple(r) for r in rows]
    finally:
        conn.close()


async def test_the_search_index_holds_a_pending_message_and_a_reindex_keeps_it(tmp_path: Path) -> None:
    path = str(tmp_path / "sophos.db")
    store, saver = SqliteRunStore(path), ThreadedSqliteSaver.open(path)
    try:
        h = make_harness(["first", ModelUnavailable(), "second answer"], repo=store, saver=saver)
        started, _ = await h.send("puffins")
        cid = started.conversation_id
        await h.send("razorbills", cid)
        want = [(0, "user", "puffins"), (1, "assistant", "first"), (2, "user", "razorbills")]
        assert entries(path, cid) == want
        saver.reindex_now()
        assert entries(path, cid) == want
        await h.resume(cid)
        assert entries(path, cid) == [*want, (3, "assistant", "second answer")]
    finally:
        saver.close()
        store.close()
