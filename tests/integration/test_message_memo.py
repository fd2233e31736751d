"""The saver's serializer encodes a message once and writes exactly LangGraph's bytes."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from adapters.langgraph.serde import MessageMemoSerializer

DUMPS = [0]


class CountingMessage(AIMessage):
    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        DUMPS[0] += 1
        return super().model_dump(**kwargs)


def test_a_thread_written_again_reencodes_only_its_new_messages() -> None:
    serde = MessageMemoSerializer()
    thread = [CountingMessage(f"m{i}", id=f"id-{i}") for i in range(50)]
    before = DUMPS[0]
    first = serde.dumps_typed({"channel_values": {"messages": thread}})
    assert DUMPS[0] - before == 50
    grown = [*thread, CountingMessage("new", id="id-new")]
    second = serde.dumps_typed({"channel_values": {"messages": grown}})
    assert DUMPS[0] - before == 51  # only the new one
    assert serde.loads_typed(second)["channel_values"]["messages"][:50] == serde.loads_typed(first)["channel_values"]["messages"]


def test_the_bytes_are_langgraphs_and_a_message_given_an_id_later_is_encoded_with_it() -> None:
    serde, plain = MessageMemoSerializer(), JsonPlusSerializer()
    message = HumanMessage("hi")  # LangGraph's reducer gives it an id after its first write
    assert serde.dumps_typed([message]) == plain.dumps_typed([message])
    message.id = "assigned"
    value = {"messages": [message, AIMessage("yo", id="a1", tool_calls=[{"id": "c", "name": "t", "args": {"x": 1}}])]}
    assert serde.dumps_typed(value) == plain.dumps_typed(value)
    assert serde.dumps_typed(value) == plain.dumps_typed(value)  # from the memo, the same bytes
    assert serde.loads_typed(serde.dumps_typed(value))["messages"][0].id == "assigned"
