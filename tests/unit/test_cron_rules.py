"""domain.crons: a hosted graph's input kept on a schedule (checked, bounded), how a schedule
sends either a message or a graph's input, and a search of crons (filters, order, pages)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from domain.crons import MAX_PAYLOAD, CronQuery, GraphInput, OnCompleted, check_webhook, parse_on_completed
from domain.errors import InvalidInput
from domain.hosted import GraphRun
from domain.schedules import ScheduleEdit, ScheduleSpec, Timing
from entrypoints.schedule_dto import schedule_dto

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
GRAPH = GraphInput("agent", "a-1", {"value": "x"}, metadata={"label": "l"})


def test_a_graph_input_makes_the_run_each_firing_starts() -> None:
    run = GRAPH.run("t-1")
    assert (run.graph_id, run.thread_id, run.input, run.stream_modes) == ("agent", "t-1", {"value": "x"}, ("values",))


@pytest.mark.parametrize(
    "fields",
    [
        {"input": "x" * (MAX_PAYLOAD + 1)},
        {"input": float("nan")},
        {"input": {1, 2}},
        {"stream_modes": ("telepathy",)},
        {"durability": "forever"},
        {"metadata": ["not", "an", "object"]},
    ],
)
def test_a_graph_input_that_is_not_bounded_json_is_refused(fields: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        replace(GRAPH, **fields)


def test_a_cron_sends_an_input_never_a_command_nor_a_checkpoint() -> None:
    with pytest.raises(InvalidInput):
        GraphInput.of(GraphRun("agent", "", command={"resume": 1}), "a-1", {}, None)
    with pytest.raises(InvalidInput):
        GraphInput.of(GraphRun("agent", "", checkpoint_id="c1"), "a-1", {}, None)


def test_a_schedule_sends_a_message_or_a_graphs_input_not_both() -> None:
    ScheduleSpec(Timing("0 8 * * *"), "", graph=GRAPH)
    with pytest.raises(InvalidInput):
        ScheduleSpec(Timing("0 8 * * *"), "hello", graph=GRAPH)
    with pytest.raises(InvalidInput):
        ScheduleSpec(Timing("0 8 * * *"), "")
    made = ScheduleSpec(Timing("0 8 * * *"), "", graph=GRAPH).schedule("s-1", "u", T0)
    with pytest.raises(InvalidInput):
        ScheduleEdit(message="now a message").apply(made, T0)
    plain = ScheduleSpec(Timing("0 8 * * *"), "hello").schedule("s-2", "u", T0)
    with pytest.raises(InvalidInput):
        ScheduleEdit(graph=GRAPH).apply(plain, T0)


def test_an_edit_keeps_what_it_does_not_name() -> None:
    made = ScheduleSpec(Timing("0 8 * * *"), "", graph=GRAPH, webhook="https://a.example/x").schedule("s-1", "u", T0)
    edited = ScheduleEdit(enabled=False).apply(made, T0)
    assert edited.graph == GRAPH and edited.webhook == "https://a.example/x" and edited.next_at is None
    moved = GRAPH.edited(GraphRun("agent", "", input={"value": "y"}), None, OnCompleted.KEEP)
    assert (moved.input, moved.metadata, moved.on_completed, moved.assistant_id) == (
        {"value": "y"},
        {"label": "l"},
        OnCompleted.KEEP,
        "a-1",
    )


def test_webhooks_and_on_run_completed_are_checked() -> None:
    assert check_webhook(None) is None and check_webhook("https://h.example/done") == "https://h.example/done"
    for bad in ("file:///etc/passwd", "https://h.example/" + "x" * 3000, 42):
        with pytest.raises(InvalidInput):
            check_webhook(bad)
    assert parse_on_completed("keep") is OnCompleted.KEEP and parse_on_completed(None) is None
    with pytest.raises(InvalidInput):
        parse_on_completed("shred")


def test_a_search_filters_orders_and_pages() -> None:
    query = CronQuery(assistant_id="agent", metadata={"label": "l"}, limit=2, offset=1, sort_by="cron_id", descending=False)
    assert query.matches("a-1", "agent", None, True, {"label": "l", "more": 1})
    assert not query.matches("a-1", "agent", None, True, {"label": "other"})
    assert not query.matches("a-2", "other", None, True, {"label": "l"})
    assert query.page(["c", "a", "d", "b"], lambda x: x) == ["b", "c"]
    assert CronQuery(descending=True).page([None, "a"], lambda x: x) == ["a", None]
    for bad in ({"limit": 0}, {"limit": 1001}, {"offset": -1}, {"sort_by": "owner"}):
        with pytest.raises(InvalidInput):
            CronQuery(**bad)  # type: ignore[arg-type]


def test_the_api_shows_a_graph_schedules_graph_and_webhook() -> None:
    made = ScheduleSpec(Timing("0 8 * * *"), "", graph=GRAPH, webhook="https://a.example/x").schedule("s-1", "u", T0)
    dto = schedule_dto(made)
    assert (dto["graphId"], dto["webhook"], dto["message"]) == ("agent", "https://a.example/x", "")
