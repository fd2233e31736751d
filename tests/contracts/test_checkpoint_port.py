"""The CheckpointPort contract over LangGraph's in-memory saver and our SQLite saver: the
same runs give the same thread and the same checkpoint history."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.memory.saver import InMemoryThreadSaver
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.saver import ThreadedSqliteSaver
from domain.errors import ConversationNotFound, InvalidInput, ModelUnreachable
from domain.model import SystemMode, new_id
from domain.models import SettingsChange
from tests.support.harness import Harness, make_harness, recording_tool


async def scenario(h: Harness) -> str:
    """A tool round, a failed model call, a resume, and a second turn."""
    started, _ = await h.send("first")
    cid = started.conversation_id
    await h.send("second", cid)
    await h.resume(cid)
    await h.send("third", cid)
    return cid


def harness_over(saver: Any) -> Harness:
    """The SQLite saver fences its writes on the runs table: give it a store on its file."""
    store = None
    if isinstance(saver, ThreadedSqliteSaver):
        path = saver.conn.execute("PRAGMA database_list").fetchone()[2]
        store = SqliteRunStore(path)
    return make_harness(REPLIES, tools=[recording_tool([], "t__a")], saver=saver, repo=store)


REPLIES: list[Any] = [[("t__a", {"n": 1})], "one", ModelUnreachable(), "two", "three"]


class CheckpointPortContract:
    @pytest.fixture
    def saver(self, tmp_path: Path) -> Iterator[Any]:
        raise NotImplementedError

    @pytest.fixture
    def harness(self, saver: Any) -> Iterator[Harness]:
        yield harness_over(saver)

    async def test_an_unknown_thread_is_empty(self, harness: Harness) -> None:
        thread = await harness.runs.checkpoints.get_thread("nope")
        assert thread.messages == () and not thread.work_left and not thread.exists
        assert list(await harness.runs.checkpoints.list_checkpoints("nope")) == []

    async def test_the_thread_holds_every_message_in_order(self, harness: Harness) -> None:
        cid = await scenario(harness)
        thread = await harness.runs.checkpoints.get_thread(cid)
        assert [m.role for m in thread.messages] == [
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant",
        ]
        assert not thread.work_left and thread.run_id == (await harness.repo.latest_run(cid)).id  # type: ignore[union-attr]

    async def test_the_history_lists_every_checkpoint_oldest_first(self, harness: Harness) -> None:
        cid = await scenario(harness)
        history = list(await harness.runs.checkpoints.list_checkpoints(cid))
        shape = [(c.step, c.source, c.next, c.message_count) for c in history]
        assert shape == EXPECTED
        assert history[-1].last_message is not None and history[-1].last_message.content == "three"
        assert len({c.run_id for c in history}) == 3  # the first, the resume, the third

    async def test_a_fork_copies_the_branch_up_to_a_message_into_a_new_conversation(self, harness: Harness) -> None:
        cid = await scenario(harness)
        source = await harness.conversations.get(cid)
        fork = await harness.conversations.fork(cid, 1)  # the assistant's tool call: its result comes along
        assert fork.id != cid and fork.title == "first (fork)" and fork.message_count == 3
        copied = await harness.conversations.get(fork.id)
        assert copied.messages == source.messages[:3]
        assert not copied.resumable and copied.conversation.message_count == 3
        assert (await harness.conversations.get(cid)).messages == source.messages  # the source is left as it was
        started, events = await harness.send("and now?", fork.id)
        assert events[-1].data["status"] == "completed"
        assert [m.content for m in harness.model.seen[-1].messages][:3] == [m.content for m in source.messages[:3]]
        assert len((await harness.conversations.get(fork.id)).messages) == 5
        assert len((await harness.conversations.get(cid)).messages) == len(source.messages)

    async def test_a_fork_keeps_the_model_and_system_prompt_of_its_source(self, harness: Harness) -> None:
        cid = await scenario(harness)
        change = SettingsChange("other-model", "Be terse.", True, True, SystemMode.REPLACE, True)
        await harness.conversations.configure(cid, change)
        fork = await harness.conversations.fork(cid, 1)
        assert (fork.model, fork.system, fork.system_mode) == ("other-model", "Be terse.", SystemMode.REPLACE)
        stored = (await harness.conversations.get(fork.id)).conversation
        assert (stored.model, stored.system, stored.message_count) == ("other-model", "Be terse.", 3)
        harness.model.replies.append("in the fork")
        await harness.send("and now?", fork.id)
        assert harness.model.seen[-1].model == "other-model" and harness.model.seen[-1].system == "Be terse."

    async def test_a_fork_at_a_user_message_waits_for_its_answer(self, harness: Harness) -> None:
        cid = await scenario(harness)
        fork = await harness.conversations.fork(cid, 4)  # "second"
        copied = await harness.conversations.get(fork.id)
        assert [m.content for m in copied.messages][-1] == "second" and copied.resumable
        harness.model.replies.append("answered in the fork")
        events = await harness.resume(fork.id)
        assert events[-1].data["status"] == "completed"
        assert (await harness.conversations.get(fork.id)).messages[-1].content == "answered in the fork"

    async def test_a_fork_at_no_message_is_refused_and_stores_nothing(self, harness: Harness) -> None:
        cid = await scenario(harness)
        before = len(await harness.conversations.list())
        for bad in (-1, 99, "1", None, True, 1.5):
            with pytest.raises(InvalidInput):
                await harness.conversations.fork(cid, bad)
        assert len(await harness.conversations.list()) == before
        with pytest.raises(ConversationNotFound):
            await harness.conversations.fork(new_id(), 0)

    async def test_delete_removes_the_thread(self, harness: Harness) -> None:
        cid = await scenario(harness)
        await harness.runs.checkpoints.delete_thread(cid)
        assert (await harness.runs.checkpoints.get_thread(cid)).messages == ()
        assert list(await harness.runs.checkpoints.list_checkpoints(cid)) == []


EXPECTED = [
    (-1, "input", ("__start__",), 0),
    (0, "loop", ("agent",), 1),
    (1, "loop", ("tools",), 2),
    (2, "loop", ("agent",), 3),
    (3, "loop", (), 4),
    # the next messages wait on the last checkpoint as pending input: the failed model call
    # wrote no checkpoint, the resume ran from its message
    (4, "loop", (), 6),
    (5, "loop", (), 8),
]


class TestInMemorySaver(CheckpointPortContract):
    @pytest.fixture
    def saver(self, tmp_path: Path) -> Iterator[Any]:
        yield InMemoryThreadSaver()


class TestSqliteSaverKeepingEverything(CheckpointPortContract):
    @pytest.fixture
    def saver(self, tmp_path: Path) -> Iterator[Any]:
        saver = ThreadedSqliteSaver.open(str(tmp_path / "db.sqlite"), keep=0)
        yield saver
        saver.close()


class TestSqliteSaverPruning(CheckpointPortContract):
    @pytest.fixture
    def saver(self, tmp_path: Path) -> Iterator[Any]:
        saver = ThreadedSqliteSaver.open(str(tmp_path / "db.sqlite"), keep=2)
        yield saver
        saver.close()


async def test_the_fast_read_of_a_finished_thread_equals_langgraphs_own(tmp_path: Path) -> None:
    from adapters.langgraph.engine import LangGraphThreads

    saver = ThreadedSqliteSaver.open(str(tmp_path / "db.sqlite"))
    h = harness_over(saver)
    cid = await scenario(h)
    threads = h.runs.checkpoints
    assert isinstance(threads, LangGraphThreads)
    head = await threads.head(cid)
    fast = await threads._load_finished(cid, head)
    assert fast is not None

    async def never(thread_id: str, head: Any) -> None:
        return None

    slow = LangGraphThreads(threads.graph, saver)
    slow._load_finished = never  # type: ignore[method-assign,assignment]
    assert fast == await slow._load(cid, head)
    saver.close()
