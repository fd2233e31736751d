"""Crash-complete traces (issue 47 items 1 and 2): what a run's nodes record, and the shipper.

`RunTracer` records a span in the store before the work it describes starts (a run's first
step, a model call, a tool call) and ends it when the work ends, each a write of its own
that returns once durable. `TraceShipper` (a task of the Supervisor, in every live process)
claims what is recorded, ready and not acknowledged, sends it with the ids it was recorded
with, and marks it acknowledged only when the receiver said so: a span is sent again only
when an acknowledgement was lost, or when the process that claimed it died first. A call
cut by a crash is shipped ended as interrupted once its run is no longer running.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from domain.traces import (
    AGENT_NAME,
    Attribute,
    SpanEnd,
    SpanKind,
    SpanRecord,
    SpanStatus,
    agent_span_id,
    chat_span_id,
    finish,
    summary_span_id,
    title_span_id,
    tool_span_id,
    trace_id,
)
from ports.traces import SpanSink, SpanStore

log = logging.getLogger(__name__)

RUNS_KEPT = 1024
KEPT_SECONDS = 7 * 86_400  # acknowledged spans are kept a week: a resume within it joins its turn's trace
CONTENT_CHARS = 16_000  # a captured message's text at most: a span stays a bounded size


def now_ns() -> int:
    return time.time_ns()


class RunTracer:
    """The spans of this process's runs. `capture`: message content and tool arguments and
    results go on the spans (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)."""

    def __init__(self, store: SpanStore, capture: bool = False, clock: Callable[[], int] = now_ns) -> None:
        self.store = store
        self.capture = capture
        self.clock = clock
        self._runs: OrderedDict[str, SpanRecord] = OrderedDict()  # run -> its span, bounded
        self._unrecorded: set[str] = set()

    async def run_span(self, run_id: str, conversation_id: str, resumed: bool, agent: str = AGENT_NAME) -> SpanRecord:
        """The run's span, recorded with its first call's span (its first model or tool call
        in this process). A resumed run (after a
        crash, a stop or a question) joins the trace of the conversation's latest run, as a
        child of that trace's first run span. `agent`: a hosted graph's id, else Sophos."""
        known = self._runs.get(run_id)
        if known is not None:
            return known
        trace, parent = trace_id(conversation_id, run_id), None
        if resumed:
            before = await self.store.latest_run_span(conversation_id)
            if before is not None and before.run_id != run_id:
                trace, parent = before.trace_id, before.parent_id or before.span_id
        attributes: dict[str, Attribute] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
            "gen_ai.conversation.id": conversation_id,
            "sophos.run.id": run_id,
            "sophos.run.resumed": resumed,
        }
        span = SpanRecord(
            agent_span_id(run_id),
            trace,
            parent,
            conversation_id,
            run_id,
            SpanKind.AGENT,
            f"invoke_agent {agent}",
            self.clock(),
            attributes=attributes,
        )
        self._runs[run_id] = span
        self._unrecorded.add(span.span_id)  # written with the run's first call's span: one write
        if len(self._runs) > RUNS_KEPT:
            self._unrecorded.discard(self._runs.popitem(last=False)[1].span_id)
        return span

    async def hosted_run(self, run_id: str, conversation_id: str, graph_id: str, resumed: bool) -> None:
        """A hosted graph's run span (services.hosted), recorded now: the calls inside the
        user's graph are not seen, so no call's span carries it. It ends with the run."""
        span = await self.run_span(run_id, conversation_id, resumed, agent=graph_id)
        if span.span_id in self._unrecorded:
            await self.store.record([span])
            self._unrecorded.discard(span.span_id)

    async def ended_run_span(self, run_id: str, conversation_id: str) -> SpanRecord | None:
        """The span of a run of this process that ended (what a call after it, the title's,
        joins); None when the run has none recorded (no call was traced)."""
        known = self._runs.get(run_id)
        if known is not None and known.span_id not in self._unrecorded:
            return known
        latest = await self.store.latest_run_span(conversation_id)
        return latest if latest is not None and latest.run_id == run_id else None

    async def model_call_started(
        self, run: SpanRecord, step: int, index: int, model: str, messages: Any = None, purpose: str | None = None
    ) -> str:
        """A model call's span, recorded before the call. `purpose`: "summary" or "title"
        for the calls Sophos makes besides the answer (sophos.call.purpose), their own ids."""
        attributes: dict[str, Attribute] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            **_ids(run),
        }
        if self.capture and messages is not None:
            attributes["gen_ai.input.messages"] = _content(messages)
        span_id = chat_span_id(run.run_id, step, index)
        if purpose is not None:
            attributes["sophos.call.purpose"] = purpose
            span_id = title_span_id(run.run_id) if purpose == "title" else summary_span_id(run.run_id, step)
        return await self._start(run, span_id, SpanKind.CHAT, f"chat {model}", attributes)

    async def model_call_ended(
        self, span_id: str, tokens: tuple[int, int] | None, finish_reason: str, output: Any = None, error: str | None = None
    ) -> None:
        await self.end(self.model_call_ending(span_id, tokens, finish_reason, output, error))

    def model_call_ending(
        self, span_id: str, tokens: tuple[int, int] | None, finish_reason: str, output: Any = None, error: str | None = None
    ) -> SpanEnd:
        """A model call's end, not written: the caller writes it with the call's usage row
        (UsageStore.add), else with `end`."""
        attributes: dict[str, Attribute] = {"gen_ai.response.finish_reasons": (finish_reason,)}
        if tokens is not None:
            attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"] = tokens
        if self.capture and output is not None:
            attributes["gen_ai.output.messages"] = _content(output)
        return self._ending(span_id, attributes, error)

    async def end(self, ending: SpanEnd) -> None:
        await self.store.end(ending.span_id, ending.ended, ending.status, ending.attributes)

    async def tool_call_started(self, run: SpanRecord, call_id: str, name: str, args: Any = None) -> str:
        attributes: dict[str, Attribute] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
            **_ids(run),
        }
        if self.capture and args is not None:
            attributes["gen_ai.tool.call.arguments"] = _content(args)
        return await self._start(run, tool_span_id(run.run_id, call_id), SpanKind.TOOL, f"execute_tool {name}", attributes)

    async def tool_call_ended(self, span_id: str, result: str | None, error: str | None = None) -> None:
        attributes: dict[str, Attribute] = {}
        if self.capture and result is not None:
            attributes["gen_ai.tool.call.result"] = result[:CONTENT_CHARS]
        await self._end(span_id, attributes, error)

    async def _start(self, run: SpanRecord, span_id: str, kind: SpanKind, name: str, attributes: dict[str, Attribute]) -> str:
        span = SpanRecord(
            span_id, run.trace_id, run.span_id, run.conversation_id, run.run_id, kind, name, self.clock(), attributes=attributes
        )
        if run.span_id in self._unrecorded:
            await self.store.record([run, span])
            self._unrecorded.discard(run.span_id)
        else:
            await self.store.record([span])
        return span_id

    async def _end(self, span_id: str, attributes: dict[str, Attribute], error: str | None) -> None:
        await self.end(self._ending(span_id, attributes, error))

    def _ending(self, span_id: str, attributes: dict[str, Attribute], error: str | None) -> SpanEnd:
        if error is not None:
            attributes["error.type"] = error
        return SpanEnd(span_id, self.clock(), SpanStatus.ERROR if error else SpanStatus.OK, attributes)


def _ids(run: SpanRecord) -> dict[str, Attribute]:
    return {"gen_ai.conversation.id": run.conversation_id, "sophos.run.id": run.run_id}


def _content(value: Any) -> str:
    return (value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False))[:CONTENT_CHARS]


class TraceShipper:
    """Ships recorded spans to `sink`, `batch` at a time, from any process: claims are leased
    (`lease` seconds), so two processes do not send the same spans at once, and a claimant's
    death only delays its spans by the lease."""

    def __init__(self, store: SpanStore, sink: SpanSink, batch: int = 256, lease: float = 30.0) -> None:
        self.store = store
        self.sink = sink
        self.batch = batch
        self.lease = lease
        self.owner = f"{os.getpid()}-{id(self):x}"

    async def ship_once(self) -> int:
        """Send what is ready; the number of spans the receiver acknowledged."""
        shipped = 0
        while True:
            pending = await self.store.claim(self.owner, time.time(), self.lease, self.batch)
            if not pending:
                return shipped
            spans = [finish(p) for p in pending]
            if not await self.sink.send(spans):
                log.warning("the trace receiver did not acknowledge %d span(s): they will be sent again", len(spans))
                return shipped
            await self.store.acknowledge([s.span_id for s in spans])
            shipped += len(spans)
            if len(pending) < self.batch:
                return shipped

    async def prune(self) -> int:
        """Delete the acknowledged spans older than KEPT_SECONDS."""
        return await self.store.prune(time.time_ns() - KEPT_SECONDS * 1_000_000_000)

    async def aclose(self) -> None:
        await self.sink.aclose()
