"""A thread's stored messages are converted to domain messages once, however long it grows."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from adapters.langchain import messages as conversion
from adapters.langchain.messages import ConversionCache


def turn(i: int) -> list[BaseMessage]:
    return [HumanMessage(f"question {i}", id=f"h{i}"), AIMessage(f"answer {i}", id=f"a{i}")]


@pytest.fixture
def converted(monkeypatch: pytest.MonkeyPatch) -> list[BaseMessage]:
    """Every stored message handed to the real conversion."""
    seen: list[BaseMessage] = []
    real = conversion.to_domain

    def spy(message: BaseMessage) -> object:
        seen.append(message)
        return real(message)

    monkeypatch.setattr(conversion, "to_domain", spy)
    return seen


def test_a_growing_thread_converts_only_its_new_messages_and_matches_a_full_conversion(
    converted: list[BaseMessage],
) -> None:
    cache = ConversionCache()
    stored: list[BaseMessage] = []
    outs = []
    for i in range(50):
        stored = [*stored, *turn(i)]  # LangGraph hands a new list of the same objects each step
        outs.append((list(stored), cache.convert_thread("t", stored)))
    assert len(converted) == 100  # each message once, not 2 + 4 + ... + 100
    for seen, out in outs:
        assert out == conversion.to_domain_all(seen)


def test_a_new_list_of_the_same_objects_reconverts_nothing(converted: list[BaseMessage]) -> None:
    cache = ConversionCache()
    stored = [m for i in range(20) for m in turn(i)]
    first = cache.convert_thread("t", stored)
    converted.clear()
    assert cache.convert_thread("t", list(stored)) == first
    assert cache.convert_thread("t", [*stored, ToolMessage("done", tool_call_id="c1", id="r1")])[-1].content == "done"
    assert [m.id for m in converted] == ["r1"]


def test_a_thread_whose_start_changed_is_converted_afresh(converted: list[BaseMessage]) -> None:
    cache = ConversionCache()
    stored = [m for i in range(5) for m in turn(i)]
    cache.convert_thread("t", stored)
    edited = [HumanMessage("question 0, edited", id="h0-b"), *stored[1:4]]  # a branch: new first message
    out = cache.convert_thread("t", edited)
    assert out == conversion.to_domain_all(edited)
    assert out[0].content == "question 0, edited"


def test_threads_do_not_share_their_last_list_and_system_messages_stay_out() -> None:
    cache = ConversionCache()
    a = [SystemMessage("not a thread message"), *turn(1)]
    b = turn(2)
    assert [m.content for m in cache.convert_thread("a", a)] == ["question 1", "answer 1"]
    assert [m.content for m in cache.convert_thread("b", b)] == ["question 2", "answer 2"]
    assert [m.content for m in cache.convert_thread("a", [*a, *turn(3)])] == ["question 1", "answer 1", "question 3", "answer 3"]
