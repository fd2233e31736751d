"""A prompt's conversion reuses, for its leading objects, what the last prompt of its thread
became (adapters/langchain/prefix.py), and the prompts built with it are the same."""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage

from adapters.langchain.messages import PromptCache, to_langchain
from adapters.langchain.prefix import PrefixMemo
from adapters.ollama.wire import WireCache
from domain.model import AssistantMessage, UserMessage


class Item:
    def __init__(self, name: str) -> None:
        self.name = name


def test_the_leading_objects_shared_with_the_last_prompt_reuse_its_outputs() -> None:
    memo: PrefixMemo[Item, str] = PrefixMemo()
    a, b, c, d = Item("a"), Item("b"), Item("c"), Item("d")
    assert memo.reuse([a, b]) == []
    memo.remember([a, b, c], ["A", "B", "C"])
    assert memo.reuse([a, b, c, d]) == ["A", "B", "C"]
    assert memo.reuse([a, d, c]) == ["A"]  # stops at the first other object
    assert memo.reuse([a, Item("b")]) == ["A"]  # an equal object is not the same object
    assert memo.reuse([a]) == ["A"]  # a shorter prompt (a summary took the rest, a branch)
    assert memo.reuse([b, c]) == []  # another first object: another thread


def test_a_shared_first_item_does_not_mix_threads() -> None:
    memo: PrefixMemo[Item, str] = PrefixMemo(key_at=1)
    system, one, two = Item("system"), Item("one"), Item("two")
    memo.remember([system, one], ["S", "1"])
    memo.remember([system, two], ["S", "2"])
    assert memo.reuse([system, one, Item("x")]) == ["S", "1"]
    assert memo.reuse([system, two]) == ["S", "2"]
    assert memo.reuse([system]) == []


def test_prompts_built_from_a_remembered_prefix_are_the_prompts_built_afresh() -> None:
    cache = PromptCache()
    thread = [UserMessage("hi", id="u1"), AssistantMessage("hello", id="a1")]
    first = cache.prompt("sys", thread)
    longer = [*thread, UserMessage("more", id="u2")]
    second = cache.prompt("sys", longer)
    assert second[1] is first[1] and second[2] is first[2]  # the same objects, reused
    assert [(m.type, m.content, m.id) for m in second] == [
        (m.type, m.content, m.id) for m in [first[0], *(to_langchain(x, stored=False) for x in longer)]
    ]
    forked = cache.prompt("sys", [thread[0], UserMessage("other", id="u3")])
    assert forked[1] is first[1] and forked[2].content == "other"


def test_the_wire_form_of_a_longer_prompt_reuses_the_last_and_converts_only_the_tail() -> None:
    wire = WireCache()
    converted: list[str] = []

    def stock(messages: list[BaseMessage]) -> list[dict[str, object]]:
        converted.extend(str(m.content) for m in messages)
        return [{"role": "user", "content": m.content} for m in messages]

    system, a, b = HumanMessage("sys"), HumanMessage("a"), HumanMessage("b")
    first = wire.convert([system, a], stock)
    second = wire.convert([system, a, b], stock)
    assert converted == ["sys", "a", "b"] and second[:2] == first and second[0] is first[0]
    assert [m["content"] for m in second] == ["sys", "a", "b"]
