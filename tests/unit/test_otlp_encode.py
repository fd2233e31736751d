"""The spans' OTLP encoding (adapters/otel/encode.py) is byte for byte the SDK's stock
encoding of the same spans as ReadableSpans: an SDK upgrade that changes its encoding, or
the exporter's client the sink sends through, fails here."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, Status, StatusCode, TraceFlags
from opentelemetry.trace import SpanKind as SdkKind

from adapters.otel.config import TraceConfig
from adapters.otel.sink import OtlpSpanSink
from domain.traces import (
    INTERRUPTED,
    SpanKind,
    SpanRecord,
    SpanStatus,
    agent_span_id,
    chat_span_id,
    status_message,
    tool_span_id,
    trace_id,
)

RUN, CONVERSATION = "run-1", "conversation-1"
TRACE = trace_id(CONVERSATION, RUN)


def spans() -> list[SpanRecord]:
    agent = agent_span_id(RUN)
    return [
        SpanRecord(
            agent, TRACE, None, CONVERSATION, RUN, SpanKind.AGENT, "invoke_agent sophos", 10, 90, SpanStatus.OK,
            {"gen_ai.operation.name": "invoke_agent", "sophos.run.resumed": False, "sophos.run.status": "completed"},
        ),
        SpanRecord(
            chat_span_id(RUN, 1, 0), TRACE, agent, CONVERSATION, RUN, SpanKind.CHAT, "chat qwen3", 11, 50, SpanStatus.OK,
            {"gen_ai.request.model": "qwen3", "gen_ai.usage.input_tokens": 120, "gen_ai.response.finish_reasons": ("stop",),
             "sophos.ratio": 0.5, "gen_ai.output.messages": "ünïcode ✓"},
        ),
        SpanRecord(
            tool_span_id(RUN, "call-1"), TRACE, agent, CONVERSATION, RUN, SpanKind.TOOL, "execute_tool append", 51, 52,
            SpanStatus.ERROR, {"gen_ai.tool.name": "append", INTERRUPTED: True, "error.type": "interrupted"},
        ),
        SpanRecord(
            tool_span_id(RUN, "call-2"), TRACE, agent, CONVERSATION, RUN, SpanKind.TOOL, "execute_tool x", 53, 54,
            SpanStatus.ERROR, {"error.type": "tool_error"},
        ),
        SpanRecord(chat_span_id(RUN, 2, 0), TRACE, agent, CONVERSATION, RUN, SpanKind.CHAT, "chat qwen3", 55, 56),
    ]  # fmt: skip


KINDS = {SpanKind.AGENT: SdkKind.INTERNAL, SpanKind.CHAT: SdkKind.CLIENT, SpanKind.TOOL: SdkKind.INTERNAL}
CODES = {SpanStatus.UNSET: StatusCode.UNSET, SpanStatus.OK: StatusCode.OK, SpanStatus.ERROR: StatusCode.ERROR}


def context(trace: str, span: str) -> SpanContext:
    return SpanContext(int(trace, 16), int(span, 16), is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def readable(sink: OtlpSpanSink, span: SpanRecord) -> ReadableSpan:
    """The span as the SDK's own tracer would have made it."""
    return ReadableSpan(
        span.name,
        context=context(span.trace_id, span.span_id),
        parent=context(span.trace_id, span.parent_id) if span.parent_id else None,
        resource=sink.resource,
        attributes=dict(span.attributes),
        kind=KINDS[span.kind],
        status=Status(CODES[span.status], status_message(span)),
        start_time=span.started,
        end_time=span.ended,
        instrumentation_scope=sink.scope,
    )


def test_the_encoding_is_the_sdks_byte_for_byte() -> None:
    config = TraceConfig("http://127.0.0.1:9/v1/traces", resource=(("deployment.environment", "test"),), service_name="svc")
    sink = OtlpSpanSink(config)
    stock = encode_spans([readable(sink, s) for s in spans()]).SerializePartialToString()
    assert sink.encode(spans()) == stock
    assert sink.encode(spans()[:1]) == encode_spans([readable(sink, spans()[0])]).SerializePartialToString()


def test_the_sink_sends_through_the_exporters_own_client() -> None:
    exporter = OtlpSpanSink(TraceConfig("http://127.0.0.1:9/v1/traces")).exporter
    assert callable(exporter._client.export)
