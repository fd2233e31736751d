"""Each message of a thread is stored once, in its own row; checkpoints hold digests
(adapters/langgraph/message_rows.py). Real SQLite files, real savers."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph

from adapters.sqlite.saver import ThreadedSqliteSaver
from adapters.storage.message_refs import REFS_TYPE


def graph(saver: ThreadedSqliteSaver) -> Any:
    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"reply {len(state['messages'])} " + "x" * 200)]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    return builder.compile(checkpointer=saver)


def config(thread_id: str, parent: str | None = None) -> Any:
    configurable = {"thread_id": thread_id, "checkpoint_ns": ""}
    if parent:
        configurable["checkpoint_id"] = parent
    return {"configurable": configurable}


def put(saver: Any, thread_id: str, parent: str | None, messages: list[BaseMessage]) -> str:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": messages}
    saver.put(config(thread_id, parent), checkpoint, {"source": "loop", "step": 1}, {})
    return str(checkpoint["id"])


def read(path: Path, thread_id: str) -> list[tuple[str, Any, str | None]]:
    """The thread's latest messages as a new process reads them: (type, content, id)."""
    fresh = ThreadedSqliteSaver.open(str(path))
    try:
        found = fresh.get_tuple(config(thread_id))
        assert found is not None
        return [(m.type, m.content, m.id) for m in found.checkpoint["channel_values"]["messages"]]
    finally:
        fresh.close()


def stored(path: Path, thread_id: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT count(*) FROM checkpoint_messages WHERE thread_id = ?", (thread_id,)).fetchone()[0])
    finally:
        conn.close()


def test_each_message_is_stored_once_and_read_back_whole_by_another_process(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    saver = ThreadedSqliteSaver.open(str(path))
    thread = str(uuid.uuid4())
    run = graph(saver)
    for i in range(30):
        run.invoke({"messages": [HumanMessage(f"question {i}")]}, config(thread))
    assert stored(path, thread) == 60
    conn = sqlite3.connect(path)
    blobs = conn.execute("SELECT type, checkpoint FROM checkpoints WHERE thread_id = ?", (thread,)).fetchall()
    assert {t for t, _ in blobs} == {REFS_TYPE}
    # a checkpoint holds 16 bytes a message, none of their text
    assert all(b"reply" not in blob and len(blob) < 60 * 16 + 2048 for _, blob in blobs)
    conn.close()
    wrote = saver.get_tuple(config(thread))
    assert wrote is not None
    expected = [(m.type, m.content, m.id) for m in wrote.checkpoint["channel_values"]["messages"]]
    assert len(expected) == 60 and read(path, thread) == expected
    fresh = ThreadedSqliteSaver.open(str(path))
    history = list(fresh.list(config(thread)))
    assert [len(t.checkpoint["channel_values"]["messages"]) for t in history] == [60, 59, 58]
    fields = fresh.latest_message_fields(thread, history[0].config["configurable"]["checkpoint_id"])
    assert fields is not None and [f["content"] for f in fields] == [c for _, c, _ in expected]
    fresh.close()
    saver.close()


def test_messages_an_edit_dropped_go_with_the_last_checkpoint_that_held_them(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    saver = ThreadedSqliteSaver.open(str(path), keep=3)
    thread = str(uuid.uuid4())
    h1, a1, h2, a2 = HumanMessage("h1", id="h1"), AIMessage("a1", id="a1"), HumanMessage("h2", id="h2"), AIMessage("a2", id="a2")
    edited = HumanMessage("h1 edited", id="h1e")
    c1 = put(saver, thread, None, [h1, a1])
    c2 = put(saver, thread, c1, [h1, a1, h2, a2])
    c3 = put(saver, thread, c2, [edited])  # an edit of the first message: a new list
    c4 = put(saver, thread, c3, [edited, AIMessage("b1", id="b1")])
    assert stored(path, thread) == 6  # c2 and c3 still hold h1, a1, h2, a2
    put(saver, thread, c4, [edited, AIMessage("b1", id="b1"), HumanMessage("b2", id="b2")])
    assert stored(path, thread) == 3  # c2 is gone, and with it the last reference to h1, a1, h2, a2
    assert [i for _, _, i in read(path, thread)] == ["h1e", "b1", "b2"]
    saver.close()


def test_a_saver_whose_last_checkpoint_another_process_pruned_stores_its_rows_again(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    a, b = ThreadedSqliteSaver.open(str(path), keep=2), ThreadedSqliteSaver.open(str(path), keep=2)
    thread = str(uuid.uuid4())
    m1, x = HumanMessage("m1", id="m1"), AIMessage("x", id="x")
    c1 = a.put(config(thread), _checkpoint([m1, x]), {"source": "loop", "step": 1}, {})["configurable"]["checkpoint_id"]
    c2 = put(b, thread, c1, [m1, AIMessage("y", id="y")])
    c3 = put(b, thread, c2, [m1, AIMessage("y", id="y"), HumanMessage("z", id="z")])
    assert stored(path, thread) == 3  # c1 was pruned, and x with it
    # a continues from the messages it remembers (the objects of c1): its rows are gone
    put(a, thread, c3, [m1, x, HumanMessage("w", id="w")])
    assert [i for _, _, i in read(path, thread)] == ["m1", "x", "w"]
    a.close()
    b.close()


def _checkpoint(messages: list[BaseMessage]) -> Any:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": messages}
    return checkpoint


def test_a_checkpoint_stored_inline_before_is_read_and_continued(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    thread = str(uuid.uuid4())
    old = SqliteSaver(sqlite3.connect(path, check_same_thread=False))  # the format of earlier versions
    c1 = old.put(
        config(thread), _checkpoint([HumanMessage("one", id="1"), AIMessage("two", id="2")]), {"source": "loop", "step": 1}, {}
    )["configurable"]["checkpoint_id"]
    old.conn.close()
    saver = ThreadedSqliteSaver.open(str(path))
    found = saver.get_tuple(config(thread))
    assert found is not None
    messages = found.checkpoint["channel_values"]["messages"]
    put(saver, thread, c1, [*messages, HumanMessage("three", id="3")])
    assert [c for _, c, _ in read(path, thread)] == ["one", "two", "three"]
    fresh = ThreadedSqliteSaver.open(str(path))
    assert [len(t.checkpoint["channel_values"]["messages"]) for t in fresh.list(config(thread))] == [3, 2]
    fresh.close()
    saver.close()


def test_a_list_with_a_message_without_an_id_stays_inline(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    saver = ThreadedSqliteSaver.open(str(path))
    thread = str(uuid.uuid4())
    put(saver, thread, None, [HumanMessage("no id")])
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT type FROM checkpoints").fetchone()[0] == "msgpack"
    conn.close()
    assert [c for _, c, _ in read(path, thread)] == ["no id"]
    saver.close()


def test_deleting_a_thread_deletes_its_message_rows(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    saver = ThreadedSqliteSaver.open(str(path))
    keep, gone = str(uuid.uuid4()), str(uuid.uuid4())
    for thread in (keep, gone):
        graph(saver).invoke({"messages": [HumanMessage("hi")]}, config(thread))
    saver.delete_thread(gone)
    assert (stored(path, keep), stored(path, gone)) == (2, 0)
    saver.close()
