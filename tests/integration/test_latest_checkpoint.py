"""The saver serves a thread's latest checkpoint from memory, and only while it is still the
latest in the file."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

from adapters.sqlite.saver import ThreadedSqliteSaver


def graph(saver: ThreadedSqliteSaver) -> Any:
    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"reply {len(state['messages'])}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    return builder.compile(checkpointer=saver)


def test_the_latest_checkpoint_is_not_decoded_again_by_the_process_that_wrote_it(tmp_path: Path) -> None:
    saver = ThreadedSqliteSaver.open(str(tmp_path / "s.db"))
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    graph(saver).invoke({"messages": [HumanMessage("hi")]}, config)
    latest = saver.get_tuple(config)
    assert latest is not None
    # garble the stored blob: only a read that decodes it again would notice
    saver.conn.execute(
        "UPDATE checkpoints SET checkpoint = x'c1' WHERE checkpoint_id = ?", (latest.config["configurable"]["checkpoint_id"],)
    )
    saver.conn.commit()
    again = saver.get_tuple(config)
    assert again is not None and again.checkpoint == latest.checkpoint and again.metadata == latest.metadata
    assert again.checkpoint is not latest.checkpoint  # each reader gets its own copy to change
    assert [m.content for m in again.checkpoint["channel_values"]["messages"]] == ["hi", "reply 1"]
    saver.close()


def test_a_checkpoint_written_by_another_process_is_read_from_the_file(tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    a, b = ThreadedSqliteSaver.open(path), ThreadedSqliteSaver.open(path)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    graph(a).invoke({"messages": [HumanMessage("one")]}, config)
    graph(b).invoke({"messages": [HumanMessage("two")]}, config)  # b continues the thread
    seen = a.get_tuple(config)
    assert seen is not None
    assert [m.content for m in seen.checkpoint["channel_values"]["messages"]] == ["one", "reply 1", "two", "reply 3"]
    # and a's next turn continues from b's checkpoint, not from the one a remembers
    graph(a).invoke({"messages": [HumanMessage("three")]}, config)
    final = b.get_tuple(config)
    assert final is not None and len(final.checkpoint["channel_values"]["messages"]) == 6
    a.close()
    b.close()
