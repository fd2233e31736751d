"""Sophos run events as LangGraph's stream (entrypoints.lgapi.stream): what each mode gets,
each step's state as its checkpoint held it, and ids only on the last event of a group."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from domain.events import StreamEvent
from domain.model import AssistantMessage, CheckpointSummary, Message, ToolCall, ToolResult, UserMessage
from entrypoints.lgapi.stream import Projector, parse_modes, sse, stream_response
from services.hub import Batch, RunStream
from services.stream import trace

RUN = "0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5"
TID = "7d7f3f4e-1d2b-4c3a-9e8f-0a1b2c3d4e5f"
CALL = ToolCall("call_1", "demo__clock", {})
THREAD: tuple[Message, ...] = (
    UserMessage("hi", "u"),
    AssistantMessage("", (CALL,), "a1"),
    ToolResult("12:00", "call_1", "demo__clock", id="t1"),
    AssistantMessage("It is 12:00.", id="a2"),
)
LOG = [
    CheckpointSummary(f"c{i}", "", step, "loop", (), count, None, RUN) for i, (step, count) in enumerate([(1, 2), (2, 3), (3, 4)])
]


async def read() -> tuple[Sequence[Message], Sequence[CheckpointSummary]]:
    return THREAD, LOG  # read after the run ended: each step must still show as it was


EVENTS = [
    trace(1, "qwen3", "agent", "enter"),
    trace(1, "demo__clock", "tools", "call", {"name": "demo__clock", "arguments": {}, "tool_call_id": "call_1"}),
    trace(1, "qwen3", "agent", "leave"),
    trace(2, "demo__clock", "tools", "enter"),
    trace(2, "demo__clock", "tools", "result", {"name": "demo__clock", "tool_call_id": "call_1", "result": "12:00"}),
    trace(2, "demo__clock", "tools", "leave"),
    trace(3, "qwen3", "agent", "enter"),
    StreamEvent("token", "It is "),
    StreamEvent("token", "12:00."),
    trace(3, "qwen3", "agent", "leave"),
    StreamEvent("end", {"conversation": TID, "status": "completed"}),
]


def project(modes: tuple[str, ...]) -> list[tuple[str, Any]]:
    async def go() -> list[tuple[str, Any]]:
        p = Projector(modes, TID, RUN, read, base=1)
        out = await p.begin()
        for e in EVENTS:
            out += await p.feed(e)
        return out

    return asyncio.run(go())


def test_values_and_updates_show_each_step_as_its_checkpoint_held_it() -> None:
    out = project(("values", "updates"))
    values = [[m["id"] for m in d["messages"]] for e, d in out if e == "values"]
    assert values == [["u"], ["u", "a1"], ["u", "a1", "t1"], ["u", "a1", "t1", "a2"]]
    updates = [{k: [m["id"] for m in v["messages"]]} for e, d in out if e == "updates" for k, v in d.items()]
    assert updates == [{"agent": ["a1"]}, {"tools": ["t1"]}, {"agent": ["a2"]}]
    assert out[0] == ("metadata", {"run_id": RUN, "attempt": 1})
    ai = next(d for e, d in out if e == "values" and len(d["messages"]) == 2)["messages"][1]
    assert ai["type"] == "ai" and ai["tool_calls"] == [{"id": "call_1", "name": "demo__clock", "args": {}, "type": "tool_call"}]


def test_messages_tuple_sends_tokens_and_tool_results_with_their_node() -> None:
    out = [(e, json.loads(d) if isinstance(d, str) else d) for e, d in project(("messages-tuple",))]  # tokens come encoded
    chunks = [(d[0]["type"], d[0]["content"], d[1]["langgraph_node"], d[1]["langgraph_step"]) for e, d in out if e == "messages"]
    assert chunks == [
        ("tool", "12:00", "tools", 2),
        ("AIMessageChunk", "It is ", "agent", 3),
        ("AIMessageChunk", "12:00.", "agent", 3),
    ]
    assert {e for e, _ in out} == {"metadata", "messages"}


def test_an_approval_is_an_interrupt_in_values_and_updates() -> None:
    async def go() -> list[tuple[str, Any]]:
        p = Projector(("values", "updates"), TID, RUN, read)
        calls = [{"id": "call_9", "name": "ledger__charge", "args": {"amount": 3}, "server": "ledger", "description": ""}]
        return await p.feed(StreamEvent("approval", {"conversation": TID, "run": RUN, "calls": calls}))

    out = asyncio.run(go())
    assert [e for e, _ in out] == ["updates", "values"]
    interrupt = out[0][1]["__interrupt__"][0]
    assert interrupt["id"] == "call_9" and interrupt["value"]["action_requests"][0]["args"] == {"amount": 3}
    assert out[1][1]["__interrupt__"] == [interrupt]


def test_a_stream_puts_each_event_id_on_the_last_event_of_its_group_and_ends_with_end() -> None:
    async def batches() -> AsyncGenerator[Batch, None]:
        yield [(1, EVENTS[2]), (2, StreamEvent("token", "x"))]
        yield [(3, StreamEvent("chat-error", {"code": "MODEL_UNREACHABLE", "message": "down"}))]

    async def source() -> AsyncGenerator[RunStream, None]:
        yield RunStream(RUN, batches())

    async def go() -> str:
        p = Projector(("values", "updates", "messages-tuple"), TID, RUN, read, base=1)
        response = stream_response(p, source(), 5.0, asyncio.Event(), {"Location": "/x"})
        return "".join([c if isinstance(c, str) else bytes(c).decode() async for c in response.body_iterator])

    text = asyncio.run(go())
    frames = [f for f in text.split("\n\n") if f]
    parsed = [dict(line.split(": ", 1) for line in f.split("\n")) for f in frames]
    assert [p["event"] for p in parsed] == ["metadata", "values", "updates", "values", "messages", "error", "end"]
    assert [p.get("id") for p in parsed] == [None, None, None, "1@0c1d2e3f", "2@0c1d2e3f", "3@0c1d2e3f", None]
    assert json.loads(parsed[5]["data"]) == {"error": "MODEL_UNREACHABLE", "message": "down"}


def test_stream_modes_are_checked() -> None:
    assert parse_modes(None) == ("values",)
    assert parse_modes(["values", "values", "messages-tuple"]) == ("values", "messages-tuple")
    assert parse_modes("nope") is None and parse_modes([]) is None and parse_modes([["values"]]) is None


def test_keep_alives_are_sse_comments_and_a_closing_server_ends_the_stream() -> None:
    closing = asyncio.Event()

    async def batches() -> AsyncGenerator[Batch, None]:
        await asyncio.sleep(0.2)  # nothing for a while: heartbeats meanwhile
        closing.set()
        await asyncio.sleep(10)
        yield [(1, StreamEvent("token", "never"))]

    async def source() -> AsyncGenerator[RunStream, None]:
        yield RunStream(RUN, batches())

    async def go() -> list[str]:
        p = Projector(("messages-tuple",), TID, RUN, read)
        response = stream_response(p, source(), 0.05, closing, {})
        return [c if isinstance(c, str) else bytes(c).decode() async for c in response.body_iterator]

    chunks = asyncio.run(asyncio.wait_for(go(), 5))
    assert chunks[0].startswith("event: metadata")
    assert ": heartbeat\n\n" in chunks[1:] and all(c == ": heartbeat\n\n" for c in chunks[1:])


def test_a_token_encoded_once_a_step_is_the_json_of_its_chunk() -> None:
    p = Projector(("messages-tuple",), TID, RUN, read)
    for step, text in ((1, 'a "quoted"\nline, é, \u2028 and \\'), (2, "")):
        p.step = step
        chunk, meta = json.loads(p._token(text))
        assert chunk["content"] == text and chunk["id"] == f"run-{RUN}-{step}" and chunk["type"] == "AIMessageChunk"
        assert meta["langgraph_step"] == step and meta["langgraph_node"] == "agent" and meta["thread_id"] == TID
        assert sse("messages", p._token(text)) == sse("messages", [chunk, meta])  # as a plain encoding would send it
