"""A hosted graph's run as plain values (domain.hosted) and its stored chunks as
langgraph-api's SSE events (entrypoints.lgapi.hosted.ChunkProjector)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from adapters.graphs.runner import run_config
from adapters.langgraph.keys import KEEP_ALL_KEY, RUN_KEY
from domain.assistants import NewAssistant
from domain.errors import InvalidInput
from domain.events import StreamEvent
from domain.hosted import GraphChunk, GraphRun
from entrypoints.lgapi.hosted import ChunkProjector, assistant_id, graph_run
from entrypoints.lgapi.shapes import ASSISTANT_ID


def test_a_graphs_assistant_id_is_the_one_langgraph_api_gives_it() -> None:
    assert assistant_id("agent") == ASSISTANT_ID == "5b5e57fb-38f1-5533-ac97-ed58c78001df"


@pytest.mark.parametrize(
    "fields",
    [
        {"input": {"x": 1}, "command": {"resume": "yes"}},
        {"command": {"nothing": 1}},
        {"interrupt_before": ("a", 3)},
        {"stream_modes": ("values", "tokens")},
        {"durability": "never"},
    ],
)
def test_a_run_that_asks_what_langgraph_cannot_do_is_refused(fields: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        GraphRun("g", "t", **fields)  # type: ignore[arg-type]


def test_a_resumed_run_is_the_stopped_runs_graph_config_and_modes_without_input() -> None:
    run = GraphRun(
        "g", "t", input={"x": 1}, config={"configurable": {"k": 1}}, stream_modes=("updates",), subgraphs=True, durability="async"
    )
    again = GraphRun.resumed("t", json.loads(json.dumps(run.kept())))  # as the run store keeps it
    assert again == GraphRun(
        "g", "t", config={"configurable": {"k": 1}}, stream_modes=("updates",), subgraphs=True, durability="async"
    )


G = NewAssistant("g").made(None, datetime(2026, 1, 1, tzinfo=UTC))


def test_a_run_request_becomes_a_graph_run() -> None:
    body = {
        "input": {"items": []},
        "stream_mode": "messages-tuple",
        "interrupt_before": "*",
        "checkpoint": {"checkpoint_id": "c1"},
        "stream_subgraphs": True,
    }
    run = graph_run(body, "t", G)
    assert (run.graph_id, run.assistant_id, run.kept()["assistant_id"]) == ("g", G.assistant_id, G.assistant_id)
    assert (run.stream_modes, run.interrupt_before, run.checkpoint_id, run.subgraphs, run.durability) == (
        ("messages-tuple",),
        "*",
        "c1",
        True,
        "sync",
    )
    with pytest.raises(InvalidInput):
        graph_run({"config": ["x"]}, "t", G)
    # useStream's submit({}, {command}), Agent Chat UI's inbox answer: the command alone
    answered = graph_run({"input": {}, "command": {"resume": [{"type": "accept"}]}}, "t", G)
    assert (answered.input, answered.command) == (None, {"resume": [{"type": "accept"}]})
    with pytest.raises(InvalidInput):
        graph_run({"input": {"x": 1}, "command": {"resume": 1}}, "t", G)


async def test_stored_chunks_are_sent_in_the_modes_asked_each_with_its_event_id() -> None:
    projector = ChunkProjector(("updates", "messages-tuple"), "r")
    batch = [
        (1, GraphChunk("values", {"x": 1}).event()),
        (2, GraphChunk("updates", {"n": {"x": 1}}, ("sub:1",)).event()),
        (3, GraphChunk("messages-tuple", [{"content": "hi"}, {}]).event()),
        (4, GraphChunk("error", {"error": "ValueError", "message": "no"}).event()),
        (5, StreamEvent("end", {"status": "failed"})),
    ]
    sent = (await projector.encode(batch, "abcd1234")).decode()
    assert sent == (
        'id: 2@abcd1234\nevent: updates|sub:1\ndata: {"n": {"x": 1}}\n\n'
        'id: 3@abcd1234\nevent: messages\ndata: [{"content": "hi"}, {}]\n\n'
        'id: 4@abcd1234\nevent: error\ndata: {"error": "ValueError", "message": "no"}\n\n'
    )


def test_a_clients_configurable_cannot_name_another_thread_checkpoint_or_run() -> None:
    hostile = {
        "thread_id": "other",
        "checkpoint_ns": "x",
        "checkpoint_id": "c0",
        RUN_KEY: "r0",
        KEEP_ALL_KEY: False,
        "__pregel_x": 1,
    }
    run = GraphRun("g", "t", config={"configurable": {**hostile, "user": "u1"}, "recursion_limit": 7, "callbacks": "no"})
    assert run_config(run, "r1") == {
        "recursion_limit": 7,
        "configurable": {"user": "u1", "thread_id": "t", RUN_KEY: "r1", KEEP_ALL_KEY: True},
    }
