"""Trace export settings from OpenTelemetry's standard variables (the OTLP exporter
specification's names), read from the environment the container is built from. Imports
nothing of OpenTelemetry: with no endpoint set, tracing is off and costs nothing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote

PROTOCOLS = ("http/protobuf",)  # the one the installed exporter speaks (grpc and http/json are not installed)
TRACES_PATH = "/v1/traces"


@dataclass(frozen=True)
class TraceConfig:
    """`endpoint`: the full URL spans are POSTed to (None: tracing off)."""

    endpoint: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    timeout: float = 10.0
    service_name: str = "sophos"
    resource: tuple[tuple[str, str], ...] = ()
    capture_content: bool = False
    schedule_delay: float = 5.0  # seconds between two shipments (OTEL_BSP_SCHEDULE_DELAY)
    batch: int = 512  # spans per request at most (OTEL_BSP_MAX_EXPORT_BATCH_SIZE)

    @property
    def on(self) -> bool:
        return self.endpoint is not None


def _pairs(text: str) -> tuple[tuple[str, str], ...]:
    """`k=v,k2=v2` (W3C baggage style, values percent-encoded), as the OTEL_* lists are."""
    out: list[tuple[str, str]] = []
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            out.append((unquote(key.strip()), unquote(value.strip())))
    return tuple(out)


def _number(env: Mapping[str, str], names: tuple[str, ...], default: float) -> float:
    """The first of `names` that is set, a number (milliseconds or a count) of at least 1."""
    for name in names:
        raw = env.get(name, "").strip()
        if raw:
            try:
                return max(float(raw), 1.0)
            except ValueError:
                raise ValueError(f"{name} is a number (got {raw[:40]!r})") from None
    return default


def trace_config(env: Mapping[str, str]) -> TraceConfig:
    """The settings in `env`; tracing off without an endpoint or with OTEL_SDK_DISABLED=true.
    ValueError for a protocol the installed exporter does not speak."""
    traces = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    disabled = env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"
    exporter = env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    if disabled or exporter == "none" or not (traces or base):
        return TraceConfig()
    protocol = (env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or PROTOCOLS[0]).strip()
    if protocol not in PROTOCOLS:
        raise ValueError(f"OTEL_EXPORTER_OTLP_PROTOCOL {protocol!r} is not supported: use {' or '.join(PROTOCOLS)}")
    endpoint = traces or base.rstrip("/") + TRACES_PATH  # the base URL gets the signal's path, per the specification
    headers = _pairs(env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS") or "")
    resource = _pairs(env.get("OTEL_RESOURCE_ATTRIBUTES", ""))
    service = env.get("OTEL_SERVICE_NAME", "").strip() or dict(resource).get("service.name") or "sophos"
    capture = env.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "").strip().lower() == "true"
    timeout = _number(env, ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"), 10_000) / 1000
    delay = _number(env, ("OTEL_BSP_SCHEDULE_DELAY",), 5000) / 1000
    batch = int(_number(env, ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE",), 512))
    return TraceConfig(endpoint, headers, timeout, service, resource, capture, delay, batch)
