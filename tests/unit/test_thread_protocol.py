"""LangGraph's thread protocol as plain values (domain.thread_protocol): a subscription's
checks and filter, and a thread's stored run events numbered and shaped as its events."""

from __future__ import annotations

from typing import Any

import pytest

from domain.errors import InvalidInput
from domain.events import StreamEvent
from domain.hosted import PROTOCOL_MODE, GraphChunk
from domain.thread_protocol import RUN_START, SEQ_PER_RUN, Subscription, ThreadProjection


def start(ordinal: int, run_id: str = "r") -> StreamEvent:
    return StreamEvent(RUN_START, {"run_id": f"{run_id}{ordinal}", "ordinal": ordinal})


def chunk(method: str, data: Any, ns: tuple[str, ...] = (), interrupts: list[Any] | None = None) -> StreamEvent:
    payload: dict[str, Any] = {"method": method, "data": data}
    if interrupts:
        payload["interrupts"] = interrupts
    return GraphChunk(PROTOCOL_MODE, payload, ns).event()


def project(events: list[StreamEvent]) -> list[dict[str, Any]]:
    projection = ThreadProjection()
    return [e for event in events for e in projection.feed(event, 0)]


def said(events: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(e["method"], e["params"]["data"].get("event") if e["method"] == "lifecycle" else None) for e in events]


@pytest.mark.parametrize(
    "body",
    [
        [],
        {},
        {"channels": []},
        {"channels": "values"},
        {"channels": ["values", "nope"]},
        {"channels": ["custom:"]},
        {"channels": [1]},
        {"channels": ["values"] * 65},
        {"channels": ["values"], "since": -1},
        {"channels": ["values"], "since": True},
        {"channels": ["values"], "depth": "2"},
        {"channels": ["values"], "namespaces": [["a", 1]]},
        {"channels": ["values"], "namespaces": "a"},
        {"channels": ["values"], "namespaces": [["a"]] * 65},
    ],
)
def test_a_subscription_that_is_not_one_is_refused(body: object) -> None:
    with pytest.raises(InvalidInput):
        Subscription.parse(body)


def test_a_subscription_filters_by_channel_custom_name_namespace_depth_and_seq() -> None:
    events = project(
        [
            start(0),
            chunk("values", {"x": 1}),
            chunk("custom", {"name": "progress", "step": 1}),
            chunk("custom", {"name": "other"}),
            chunk("messages", {"event": "message-start"}, ("sub:1",)),
            chunk("messages", {"event": "message-start"}, ("sub:1", "deep:2")),
        ]
    )
    root = Subscription.parse({"channels": ["messages"], "namespaces": [[]], "depth": 1})
    assert [e["params"]["namespace"] for e in events if root.matches(e)] == [["sub:1"]]
    anywhere = Subscription.parse({"channels": ["messages"]})
    assert len([e for e in events if anywhere.matches(e)]) == 2
    progress = Subscription.parse({"channels": ["custom:progress"]})
    assert [e["params"]["data"]["name"] for e in events if progress.matches(e)] == ["progress"]
    later = Subscription.parse({"channels": ["values", "lifecycle"], "since": events[1]["seq"]})
    assert [e for e in events if later.matches(e)] == []
    assert later.first_run == 0 and Subscription.parse({"channels": ["values"]}).first_run is None


def test_every_event_has_the_same_seq_and_id_in_every_stream_and_a_run_s_seqs_begin_at_its_place() -> None:
    stored = [
        start(0),
        chunk("values", {"x": 1}),
        StreamEvent("end", {"status": "completed"}),
        start(1),
        chunk("values", {"x": 2}),
    ]
    once, again = project(stored), project(stored)
    assert [(e["seq"], e["event_id"]) for e in once] == [(e["seq"], e["event_id"]) for e in again]
    assert [e["seq"] for e in once] == [1, 2, 3, SEQ_PER_RUN + 1, SEQ_PER_RUN + 2]
    assert len({e["event_id"] for e in once}) == len(once)
    # a stream that starts at the second run numbers it as the whole thread's stream does
    assert [e["seq"] for e in project(stored[3:])] == [SEQ_PER_RUN + 1, SEQ_PER_RUN + 2]


def test_input_is_asked_once_per_interrupt_only_when_the_run_has_ended_waiting() -> None:
    interrupt = [{"id": "i1", "value": "ok?"}]
    events = project(
        [
            start(0),
            chunk("values", {"x": 1}, ("sub:1",), interrupt),
            chunk("values", {"x": 1}, (), interrupt),
            StreamEvent("end", {"status": "waiting"}),
        ]
    )
    assert said(events) == [
        ("lifecycle", "running"),
        ("values", None),
        ("values", None),
        ("input.requested", None),
        ("lifecycle", "interrupted"),
    ]
    asked = events[3]
    assert asked["params"] == {"namespace": ["sub:1"], "timestamp": 0, "data": {"interrupt_id": "i1", "payload": "ok?"}}


@pytest.mark.parametrize(
    ("end", "lifecycle", "error"),
    [
        (StreamEvent("end", {"status": "completed"}), "completed", None),
        (StreamEvent("end", {"status": "cancelled"}), "failed", "cancelled"),  # it ends: clients stop waiting
        (StreamEvent("end", {"status": "interrupted"}), "interrupted", None),  # a crash: the resume follows
        (StreamEvent("chat-error", {"code": "RUN_LOST", "message": "lost"}), "failed", "lost"),
    ],
)
def test_a_run_s_end_is_its_root_lifecycle(end: StreamEvent, lifecycle: str, error: str | None) -> None:
    last = project([start(0), end])[-1]
    assert (last["method"], last["params"]["namespace"]) == ("lifecycle", [])
    assert last["params"]["data"].get("event") == lifecycle
    assert last["params"]["data"].get("error") == error


def test_a_failed_run_says_the_graph_s_error() -> None:
    failed = GraphChunk("error", {"error": "ValueError", "message": "boom"}).event()
    last = project([start(0), failed, StreamEvent("end", {"status": "failed"})])[-1]
    assert last["params"]["data"] == {"event": "failed", "error": "ValueError: boom"}


def test_a_run_of_the_plain_api_streams_its_values_and_updates_on_the_thread_s_stream() -> None:
    plain = [start(0), GraphChunk("values", {"x": 1}).event(), GraphChunk("messages-tuple", ["chunk", {}]).event()]
    assert said(project(plain)) == [("lifecycle", "running"), ("values", None)]
