"""SpanSink over OTLP/HTTP (protobuf) with the official OpenTelemetry SDK's exporter: the
stored spans, with the ids they were recorded with, are encoded by adapters/otel/encode.py
(no tracer, no sampler, no batch processor: the database is the buffer) and sent through the
exporter's HTTP client (its headers, timeout, compression, TLS and retries); its answer is
the acknowledgement. Imported only when tracing is on."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from importlib.metadata import version

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from adapters.otel.config import TraceConfig
from adapters.otel.encode import export_request
from domain.traces import Attribute, SpanRecord
from ports.traces import SpanSink


class OtlpSpanSink(SpanSink):
    def __init__(self, config: TraceConfig) -> None:
        self.exporter = OTLPSpanExporter(endpoint=config.endpoint, headers=dict(config.headers), timeout=config.timeout)
        self.resource = Resource.create({**dict(config.resource), "service.name": config.service_name})
        self.scope = InstrumentationScope("sophos", _version())
        self._resource: dict[str, Attribute] = {
            k: v for k, v in self.resource.attributes.items() if isinstance(v, (str, bool, int, float))
        }
        self._lock = asyncio.Lock()  # one request at a time: the exporter's session is not shared

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
