"""What one turn costs the SQLite file, in thread hops and transactions (counts, not times):
the saver and the run store write on the file's one writer thread, and the run's last
events go with its outcome."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.sqlite import threads
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.saver import ThreadedSqliteSaver
from adapters.sqlite.threads import SerialThread
from tests.support.harness import make_harness


def count_calls(monkeypatch: pytest.MonkeyPatch, pool: SerialThread, name: str, counts: Counter[str]) -> None:
    for method in ("submit", "run"):
        original = getattr(pool, method)

        def counted(fn: Any, /, *args: Any, original: Any = original, **kwargs: Any) -> Any:
            counts[name] += 1
            return original(fn, *args, **kwargs)

        monkeypatch.setattr(pool, method, counted)


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[SqliteRunStore, ThreadedSqliteSaver]]:
    path = str(tmp_path / "sophos.db")
    store = SqliteRunStore(path)
    saver = ThreadedSqliteSaver.open(path)
    yield store, saver
    saver.close()
    store.close()


def test_the_saver_and_the_run_store_write_on_the_files_one_thread(tmp_path: Path) -> None:
    path = str(tmp_path / "sophos.db")
    store = SqliteRunStore(path)
    saver = ThreadedSqliteSaver.open(path)
    other = SqliteRunStore(str(tmp_path / "other.db"))
    try:
        assert store._writer._pool is saver._executor
        assert other._writer._pool is not saver._executor
        assert threads.users(path) == 2
        saver.close()
        assert threads.users(path) == 1 and store._writer.call(lambda c: c.execute("SELECT 1").fetchone()) == (1,)
    finally:
        store.close()
        other.close()
    assert threads.users(path) == 0


async def test_a_turn_is_eight_hops_to_the_writer_thread_and_one_read(
    stores: tuple[SqliteRunStore, ThreadedSqliteSaver], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, saver = stores
    h = make_harness(["first", "second answer here"], repo=store, saver=saver)
    started, _ = await h.send("hello")
    counts: Counter[str] = Counter()
    count_calls(monkeypatch, store._writer._pool, "writer", counts)
    count_calls(monkeypatch, store._reader._pool, "reader", counts)
    appended: list[Any] = []
    append = store.append

    async def spy(batches: Any) -> None:
        appended.append(batches)
        await append(batches)

    monkeypatch.setattr(store, "append", spy)
    second, events = await h.send("again", started.conversation_id)
    await asyncio.sleep(0.05)
    # start_run, finish_run; the message as pending input (put_writes), the saver's
    # get_tuple, the agent's put_writes and one put; 2 head reads (the run's outcome takes
    # its message count from the saver's last put); one read of the conversation with its
    # latest run. Through LangGraph's input path: 2 puts and a put_writes more (input
    # checkpoint, the __start__ step's writes, its checkpoint)
    assert counts == Counter({"writer": 8, "reader": 1})
    assert appended == []  # no supervisor flush ran: every event went with the outcome
    logged = [e for _, e in await store.read(second.run_id, 0)]
    assert logged == events and events[-1].event == "end" and any(e.event == "token" for e in events)
    # the count the outcome recorded is the thread's: hello, first, again, second answer here
    cid = started.conversation_id
    assert store._writer.call(lambda c: c.execute("SELECT message_count FROM conversations WHERE id = ?", (cid,)).fetchone()) == (
        4,
    )
    # the saver answers only for the run that wrote the thread's last checkpoint
    assert saver.written_now(cid, second.run_id) == 4
    assert saver.written_now(cid, started.run_id) is None and saver.written_now("elsewhere", second.run_id) is None


async def test_a_new_conversations_first_turn_reads_no_head(
    stores: tuple[SqliteRunStore, ThreadedSqliteSaver], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its thread is known to be empty: nothing to plan from, nothing to settle."""
    store, saver = stores
    h = make_harness(["first"], repo=store, saver=saver)
    counts: Counter[str] = Counter()
    count_calls(monkeypatch, store._writer._pool, "writer", counts)
    count_calls(monkeypatch, store._reader._pool, "reader", counts)
    heads: list[str] = []
    head = saver.head

    def spy(thread_id: str) -> Any:
        heads.append(thread_id)
        return head(thread_id)

    monkeypatch.setattr(saver, "head", spy)
    started, events = await h.send("hello")
    await asyncio.sleep(0.05)
    assert heads == [] and events[-1].event == "end"
    # create_conversation, start_run, finish_run; the saver's get_tuple, 3 puts, 2 put_writes
    assert counts == Counter({"writer": 9})
    assert saver.written_now(started.conversation_id, started.run_id) == 2
