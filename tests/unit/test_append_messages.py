"""The messages reducer returns what LangGraph's add_messages returns, and appends without
calling it or walking the thread."""

from __future__ import annotations

import random
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

from adapters.langgraph import appending
from adapters.langgraph.appending import MessageAppender


def shape(messages: list[Any]) -> list[tuple[str, Any, Any]]:
    return [(m.type, m.id, m.content) for m in messages]


def update(rng: random.Random, thread: list[Any], n: int) -> list[Any]:
    """A random update: new messages mostly, sometimes a replacement, a removal, a chunk,
    a dict, or a removal of everything."""
    out: list[Any] = []
    for _ in range(rng.randint(1, 3)):
        pick, n = rng.random(), n + 1
        ids = [m.id for m in thread]
        if pick < 0.6 or not ids:
            out.append(rng.choice([HumanMessage, AIMessage])(f"m{n}", id=f"id{n}"))
        elif pick < 0.7:
            out.append(AIMessage(f"replaced {n}", id=rng.choice(ids)))
        elif pick < 0.8 and not out:
            out.append(RemoveMessage(id=rng.choice(ids)))
        elif pick < 0.87:
            out.append(AIMessageChunk(f"chunk {n}", id=f"id{n}"))
        elif pick < 0.94:
            out.append({"role": "user", "content": f"dict {n}", "id": f"id{n}"})
        elif pick < 0.96:
            out.append(RemoveMessage(id=REMOVE_ALL_MESSAGES))
        else:
            out.append(ToolMessage(f"tool {n}", tool_call_id=f"c{n}", id=f"id{n}"))
    return out


@pytest.mark.parametrize("seed", range(20))
def test_it_returns_what_add_messages_returns(seed: int) -> None:
    rng = random.Random(seed)
    reducer = MessageAppender(size=8)
    ours: list[Any] = []
    theirs: list[Any] = []
    states: list[tuple[list[Any], list[Any]]] = []
    for step in range(80):
        if states and rng.random() < 0.3:  # go on from an earlier list: a fork of its lineage
            ours, theirs = rng.choice(states)
        right = update(rng, theirs, step * 10)
        try:
            expected = add_messages(theirs, [m.model_copy() if hasattr(m, "model_copy") else dict(m) for m in right])
        except ValueError:
            with pytest.raises(ValueError):
                reducer(ours, right)
            continue
        ours = reducer(ours, right)
        theirs = expected
        assert shape(ours) == shape(theirs), step
        states.append((ours, theirs))


def test_an_append_does_not_call_add_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def counted(left: Any, right: Any) -> Any:
        calls.append(len(left))
        return add_messages(left, right)

    monkeypatch.setattr(appending, "add_messages", counted)
    reducer = MessageAppender()
    thread: list[Any] = [HumanMessage(f"m{i}", id=f"m{i}") for i in range(100)]
    for i in range(20):
        thread = reducer(thread, [AIMessage(f"a{i}", id=f"a{i}")])
    assert calls == [] and len(thread) == 120
    thread = reducer(thread, [AIMessage("again", id="a3")])  # a replacement: add_messages decides
    assert calls == [120] and thread[103].content == "again" and len(thread) == 120
    thread = reducer(thread, [HumanMessage("after", id="h")])  # and appends are fast again
    assert calls == [120] and thread[-1].id == "h"


def test_a_message_without_an_id_gets_one_as_add_messages_gives() -> None:
    reducer = MessageAppender()
    start = reducer([], [HumanMessage("hi", id="1")])
    new = HumanMessage("no id")
    out = reducer(start, [new])
    assert out[-1] is new and isinstance(new.id, str) and len(new.id) == 36
    again = reducer(out, [AIMessage("dup", id=new.id)])  # its id is known from now on
    assert len(again) == 2 and again[-1].content == "dup"


def test_a_thread_message_without_an_id_gets_one_in_place() -> None:
    old = HumanMessage("old")
    out = MessageAppender()([old], [AIMessage("new", id="n")])
    assert out[0] is old and isinstance(old.id, str) and [m.id for m in out] == [old.id, "n"]


def test_lists_that_share_a_lineage_each_know_their_own_messages() -> None:
    """LangGraph appends the same update twice to one list (to route an edge, then for the
    step), and a branch appends other messages at the same places."""
    reducer = MessageAppender()
    base = reducer([], [HumanMessage("a", id="a")])
    routed = reducer(base, [AIMessage("b", id="b")])
    stepped = reducer(base, [AIMessage("b", id="b")])  # b is in `routed`, not in `base`
    assert shape(stepped) == shape(routed) and len(stepped) == 2
    other = reducer(base, [AIMessage("c", id="c"), AIMessage("b", id="b")])  # b one place later
    assert [m.id for m in other] == ["a", "c", "b"]
    again = reducer(other, [AIMessage("b2", id="b")])  # b is in `other`: a replacement
    assert shape(again) == [("human", "a", "a"), ("ai", "c", "c"), ("ai", "b", "b2")]
    twice = reducer(stepped, [AIMessage("b3", id="b")])
    assert shape(twice) == [("human", "a", "a"), ("ai", "b", "b3")]
