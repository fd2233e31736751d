"""Stored spans as an OTLP export request (protobuf), built straight from the stored values
with OpenTelemetry's own message classes (opentelemetry-proto). The SDK's encoder takes its
ReadableSpans, which cost a SpanContext, a Resource hash and an attribute copy per span, twice
what this costs (bench/traces.py measures the whole path); the bytes are the same as the
SDK's for the same spans (tests/unit/test_otlp_encode.py compares them, so an SDK upgrade
that changes its encoding fails there)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, SpanFlags, Status

from domain.traces import Attribute, SpanKind, SpanRecord, SpanStatus, status_message

KINDS = {SpanKind.AGENT: Span.SPAN_KIND_INTERNAL, SpanKind.CHAT: Span.SPAN_KIND_CLIENT, SpanKind.TOOL: Span.SPAN_KIND_INTERNAL}
CODES = {
    SpanStatus.UNSET: Status.STATUS_CODE_UNSET,
    SpanStatus.OK: Status.STATUS_CODE_OK,
    SpanStatus.ERROR: Status.STATUS_CODE_ERROR,
}
# the parent (if any) is a span of this process's recording, never a remote one
FLAGS = SpanFlags.SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK


def value(v: Attribute) -> AnyValue:
    if isinstance(v, bool):  # before int: a bool is an int
        return AnyValue(bool_value=v)
    if isinstance(v, str):
        return AnyValue(string_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    return AnyValue(array_value=ArrayValue(values=[AnyValue(string_value=x) for x in v]))


def key_values(attributes: Mapping[str, Attribute]) -> list[KeyValue]:
    return [KeyValue(key=k, value=value(v)) for k, v in attributes.items()]


def span(record: SpanRecord) -> Span:
    return Span(
        trace_id=bytes.fromhex(record.trace_id),
        span_id=bytes.fromhex(record.span_id),
        parent_span_id=bytes.fromhex(record.parent_id) if record.parent_id else b"",
        name=record.name,
        kind=KINDS[record.kind],
        start_time_unix_nano=record.started,
        end_time_unix_nano=record.ended or 0,  # proto3: 0 is not sent
        attributes=key_values(record.attributes),
        status=Status(code=CODES[record.status], message=status_message(record) or ""),
        flags=FLAGS,
    )


def export_request(
    spans: Sequence[SpanRecord], resource: Mapping[str, Attribute], scope: tuple[str, str]
) -> ExportTraceServiceRequest:
    """One resource (this process) and one instrumentation scope (name, version)."""
    name, version = scope
    scoped = ScopeSpans(scope=InstrumentationScope(name=name, version=version), spans=[span(s) for s in spans])
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=Resource(attributes=key_values(resource)), scope_spans=[scoped])]
    )
