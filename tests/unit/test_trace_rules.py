"""The trace rules (domain.traces) and the tracer's spans (services.traces) against the memory
stores: ids derived from run and call ids, the shipping rules, a resumed run's place."""

from __future__ import annotations

from dataclasses import replace

from adapters.memory.runs import InMemoryRunStore
from adapters.memory.traces import InMemorySpanStore
from domain.traces import (
    INTERRUPTED,
    PendingSpan,
    SpanKind,
    SpanRecord,
    SpanStatus,
    agent_span_id,
    chat_span_id,
    finish,
    ready,
    span_id,
    tool_span_id,
    trace_id,
)
from services.traces import RunTracer

SPAN = SpanRecord("a" * 16, "b" * 32, "c" * 16, "conv", "run", SpanKind.TOOL, "execute_tool x", 100)


def test_ids_are_derived_from_their_parts_so_a_resend_has_the_same_ids() -> None:
    assert span_id("r", "x") == span_id("r", "x") != span_id("r", "y")
    assert len(span_id("r")) == 16 and len(trace_id("c", "r")) == 32
    assert trace_id("c", "r1") != trace_id("c", "r2") != trace_id("d", "r2")
    assert len({agent_span_id("r"), chat_span_id("r", 1, 0), chat_span_id("r", 1, 1), tool_span_id("r", "1")}) == 4


def test_a_call_ships_once_ended_or_once_its_run_is_no_longer_running_a_run_span_only_then() -> None:
    assert not ready(PendingSpan(SPAN, "running", None))
    assert ready(PendingSpan(replace(SPAN, ended=150), "running", None))
    assert ready(PendingSpan(SPAN, "interrupted", 400)) and ready(PendingSpan(SPAN, None, None))
    run = replace(SPAN, kind=SpanKind.AGENT, ended=None)
    assert not ready(PendingSpan(run, "running", None)) and ready(PendingSpan(run, "completed", 300))


def test_a_cut_call_ends_at_its_runs_end_as_interrupted_and_the_same_each_time() -> None:
    cut = finish(PendingSpan(SPAN, "interrupted", 400))
    assert (cut.ended, cut.status, cut.attributes[INTERRUPTED]) == (400, SpanStatus.ERROR, True)
    assert finish(PendingSpan(SPAN, "interrupted", 400)) == cut
    assert finish(PendingSpan(SPAN, None, None)).ended == SPAN.started  # its run is gone: a zero-length span
    ended = replace(SPAN, ended=150, status=SpanStatus.OK)
    assert finish(PendingSpan(ended, "interrupted", 400)) == ended


def test_a_run_span_ends_with_its_run_and_its_outcome() -> None:
    run = replace(SPAN, kind=SpanKind.AGENT)
    done = finish(PendingSpan(run, "completed", 300))
    assert (done.ended, done.status, done.attributes["sophos.run.status"]) == (300, SpanStatus.OK, "completed")
    killed = finish(PendingSpan(run, "interrupted", 300))
    assert killed.status is SpanStatus.ERROR and killed.attributes[INTERRUPTED] is True
    assert finish(PendingSpan(run, "failed", 300)).status is SpanStatus.ERROR


async def test_a_resumed_run_joins_the_trace_of_the_run_before_under_its_first_run() -> None:
    spans = InMemorySpanStore(InMemoryRunStore())
    tracer = RunTracer(spans, clock=iter(range(1000)).__next__)
    first = await tracer.run_span("r1", "conv", resumed=False)
    again = await tracer.run_span("r1", "conv", resumed=False)
    assert again == first and first.parent_id is None and first.trace_id == trace_id("conv", "r1")
    assert await spans.latest_run_span("conv") is None  # written with the run's first call's span
    await tracer.tool_call_started(first, "call-1", "append")
    assert await spans.latest_run_span("conv") == first
    second = await tracer.run_span("r2", "conv", resumed=True)
    await tracer.model_call_started(second, 3, 0, "qwen3")
    third = await tracer.run_span("r3", "conv", resumed=True)
    assert second.trace_id == third.trace_id == first.trace_id
    assert second.parent_id == third.parent_id == first.span_id
    fresh = await tracer.run_span("r4", "conv", resumed=False)  # a new message: a new turn, a new trace
    assert fresh.trace_id == trace_id("conv", "r4") and fresh.parent_id is None
