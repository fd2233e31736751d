"""SpanSink over OTLP/HTTP (protobuf) with the official OpenTelemetry SDK's exporter: the
stored spans, with the ids they were recorded with, are encoded by adapters/otel/encode.py
(no tracer, no sampler, no batch processor: the database is the buffer) and sent through the
exporter's HTTP client (its headers, timeout, compression, TLS and retries); its answer is
the acknowledgement. `readable` is the SDK's view of a span, which the stock encoder takes
(tests compare the two encodings). Imported only when tracing is on."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from importlib.metadata import version

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from adapters.otel.config import TraceConfig
from adapters.otel.encode import export_request
from domain.traces import Attribute, SpanRecord, SpanStatus, status_message
from domain.traces import SpanKind as Kind
from ports.traces import SpanSink

KINDS = {Kind.AGENT: SpanKind.INTERNAL, Kind.CHAT: SpanKind.CLIENT, Kind.TOOL: SpanKind.INTERNAL}
CODES = {SpanStatus.UNSET: StatusCode.UNSET, SpanStatus.OK: StatusCode.OK, SpanStatus.ERROR: StatusCode.ERROR}


def _context(trace_id: str, span_id: str) -> SpanContext:
    return SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))


class OtlpSpanSink(SpanSink):
    def __init__(self, config: TraceConfig) -> None:
        self.exporter = OTLPSpanExporter(endpoint=config.endpoint, headers=dict(config.headers), timeout=config.timeout)
        self.resource = Resource.create({**dict(config.resource), "service.name": config.service_name})
        self.scope = InstrumentationScope("sophos", _version())
        self._resource: dict[str, Attribute] = {
            k: v for k, v in self.resource.attributes.items() if isinstance(v, (str, bool, int, float))
        }
        self._lock = asyncio.Lock()  # one request at a time: the exporter's session is not shared

    def readable(self, span: SpanRecord) -> ReadableSpan:
        parent = _context(span.trace_id, span.parent_id) if span.parent_id else None
        return ReadableSpan(
            span.name,
            context=_context(span.trace_id, span.span_id),
            parent=parent,
            resource=self.resource,
            attributes=dict(span.attributes),
            kind=KINDS[span.kind],
            status=Status(CODES[span.status], status_message(span)),
            start_time=span.started,
            end_time=span.ended,
            instrumentation_scope=self.scope,
        )

    def encode(self, spans: Sequence[SpanRecord]) -> bytes:
        request = export_request(spans, self._resource, (self.scope.name, self.scope.version or ""))
        return bytes(request.SerializePartialToString())

    async def send(self, spans: Sequence[SpanRecord]) -> bool:
        data = self.encode(spans)
        async with self._lock:
            # the exporter's own client: export() would encode ReadableSpans again
            result = await asyncio.to_thread(self.exporter._client.export, data)
        return bool(result.success)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.exporter.shutdown)


def _version() -> str:
    try:
        return version("sophos")
    except Exception:  # a source tree that is not installed
        return "0"
