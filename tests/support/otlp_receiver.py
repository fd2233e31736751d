"""A real OTLP/HTTP trace receiver for the tests: POST /v1/traces with an
ExportTraceServiceRequest (protobuf, optionally gzip), decoded with `opentelemetry-proto`
(the OpenTelemetry project's generated messages), answered with an
ExportTraceServiceResponse as the OTLP specification says.

Every span received is kept, in order, with its resource and ids. `lose_answers = n`: the
next n requests are read and kept, then the connection is closed with no answer (an
acknowledgement lost on the way back), so the sender sends them again with the same ids.

    python -m tests.support.otlp_receiver [PORT]    # prints what it receives
"""

from __future__ import annotations

import gzip
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
STATUS = {0: "unset", 1: "ok", 2: "error"}


def _value(v: AnyValue) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return tuple(_value(x) for x in v.array_value.values)
    return getattr(v, which) if which else None


@dataclass(frozen=True)
class ReceivedSpan:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str
    status: str
    status_message: str
    start: int
    end: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    scope: str


@dataclass
class OtlpReceiver:
    lose_answers: int = 0
    spans: list[ReceivedSpan] = field(default_factory=list)
    requests: int = 0
    headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        """The base URL (OTEL_EXPORTER_OTLP_ENDPOINT): spans go to its /v1/traces."""
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def take(self, body: bytes, headers: dict[str, str]) -> bool:
        """Keep the request's spans; False when its answer is to be lost."""
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        received = [
            ReceivedSpan(
                s.trace_id.hex(),
                s.span_id.hex(),
                s.parent_span_id.hex() or None,
                s.name,
                KINDS[s.kind],
                STATUS[s.status.code],
                s.status.message,
                s.start_time_unix_nano,
                s.end_time_unix_nano,
                {a.key: _value(a.value) for a in s.attributes},
                {a.key: _value(a.value) for a in rs.resource.attributes},
                ss.scope.name,
            )
            for rs in request.resource_spans
            for ss in rs.scope_spans
            for s in ss.spans
        ]
        with self.lock:
            self.requests += 1
            self.headers.append(headers)
            self.spans.extend(received)
            if self.lose_answers > 0:
                self.lose_answers -= 1
                return False
        return True

    def snapshot(self) -> list[ReceivedSpan]:
        with self.lock:
            return list(self.spans)

    def start(self, port: int = 0) -> OtlpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                if not receiver.take(body, {k.lower(): v for k, v in self.headers.items()}):
                    self.close_connection = True
                    self.connection.close()  # read and kept, never acknowledged
                    return
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True, name="otlp-receiver").start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


@contextmanager
def otlp_receiver() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver().start()
    try:
        yield receiver
    finally:
        receiver.stop()


if __name__ == "__main__":
    r = OtlpReceiver().start(int(sys.argv[1]) if len(sys.argv) > 1 else 4318)
    print(f"listening on {r.endpoint}/v1/traces", flush=True)
    seen = 0
    try:
        while True:
            threading.Event().wait(1)
            for s in r.snapshot()[seen:]:
                print(s.trace_id, s.span_id, s.parent_id, s.name, s.status, flush=True)
            seen = len(r.snapshot())
    except KeyboardInterrupt:
        r.stop()
