"""The spans of the model calls Sophos makes besides the answer (a summary's), and a hosted
graph's run span (issue 47), on the in-memory span store."""

from __future__ import annotations

from datetime import datetime, timedelta

from adapters.langgraph.keys import RunContext
from adapters.langgraph.tracing import traced_summary_call
from adapters.memory.runs import InMemoryRunStore
from adapters.memory.traces import InMemorySpanStore
from domain.model import RunStatus, SummaryMessage, new_id, utc_now
from domain.traces import SpanKind, SpanStatus, agent_span_id, summary_span_id
from ports.model import Usage
from ports.runs import RunFinish
from services.traces import RunTracer
from tests.contracts.run_stores import a_running_run


class Clock:
    def __init__(self) -> None:
        self.t = utc_now()

    def now(self) -> datetime:
        return self.t

    async def advance(self, seconds: float) -> None:
        self.t += timedelta(seconds=seconds)


async def test_a_summary_call_is_a_chat_span_of_its_own_recorded_before_the_call() -> None:
    runs, clock = InMemoryRunStore(), Clock()
    run = await a_running_run(runs, clock)
    spans = InMemorySpanStore(runs)
    tracer = RunTracer(spans)
    seen_before: list[int] = []

    async def summarize() -> tuple[SummaryMessage, Usage | None]:
        seen_before.append(await spans.unacknowledged())  # the run's and the call's span, before the call
        return SummaryMessage("earlier: hello", 2, id=new_id()), Usage(prompt_tokens=30, completion_tokens=5)

    context = RunContext(run_id=run.id)
    summary, ending = await traced_summary_call(tracer, context, 4, run.conversation_id, "qwen3", summarize)
    assert summary.content == "earlier: hello" and seen_before == [2]
    assert ending is not None and ending.span_id == summary_span_id(run.id, 4)
    assert ending.attributes["gen_ai.usage.input_tokens"] == 30 and ending.status is SpanStatus.OK
    await tracer.end(ending)
    (pending,) = await spans.claim("me", 0.0, 30.0, 10)
    assert pending.span.kind is SpanKind.CHAT and pending.span.parent_id == agent_span_id(run.id)
    assert pending.span.attributes["sophos.call.purpose"] == "summary"


async def test_a_hosted_run_records_its_invoke_agent_span_at_once_named_by_its_graph() -> None:
    runs, clock = InMemoryRunStore(), Clock()
    run = await a_running_run(runs, clock)
    spans = InMemorySpanStore(runs)
    await RunTracer(spans).hosted_run(run.id, run.conversation_id, "my-graph", resumed=False)
    assert await spans.unacknowledged() == 1
    assert await spans.claim("me", 0.0, 30.0, 10) == []  # shipped once the run ends, with its end
    assert await runs.finish_run(run.id, RunFinish(RunStatus.COMPLETED, clock.now()))
    (pending,) = await spans.claim("me", 0.0, 30.0, 10)
    assert pending.span.name == "invoke_agent my-graph" and pending.span.attributes["gen_ai.agent.name"] == "my-graph"
