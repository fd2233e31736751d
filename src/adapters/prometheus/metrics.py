"""MetricsPort over prometheus-client, exposed in the Prometheus text format.

Each instance has its own CollectorRegistry (never the library's global one), so several
apps in one process, and tests, never clash. Label values are bounded: statuses, error
codes and stream sources are closed sets; tool names come from the toolbox, and past
MAX_TOOL_SERIES distinct names further ones are counted as `other`.
"""

from __future__ import annotations

import threading

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.exposition import choose_encoder

from domain.model import RunStatus, RunTrigger
from ports.metrics import DELIVERY_OUTCOMES, FIRING_OUTCOMES, MetricsPort

MAX_TOOL_SERIES = 100
TOOL_SEP = "__"  # tool names are `<server>__<tool>` (ports.tools.ToolSpec)
INF = float("inf")
RUN_BUCKETS = (0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1800, INF)
MODEL_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, INF)
TOOL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, INF)
LATENESS = "Seconds between a firing's time and the start of its run"
LATENESS_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600, INF)
FINISHED = [s.value for s in RunStatus if s.finished]


class PrometheusMetrics(MetricsPort):
    def __init__(self, max_tool_series: int = MAX_TOOL_SERIES) -> None:
        # `*_created` series would double what Prometheus stores and say nothing it needs
        # (a library-wide switch: nothing else in the process exports these metrics)
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = registry = CollectorRegistry()
        ProcessCollector(registry=registry)  # CPU, memory, open file descriptors
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)
        self.max_tool_series = max_tool_series
        self._tools: set[str] = set()
        self._tools_lock = threading.Lock()

        def counter(name: str, doc: str, *labels: str) -> Counter:
            return Counter(f"sophos_{name}", doc, labels, registry=registry)

        self.runs_started = counter("runs_started", "Runs this process started executing", "trigger")
        self.runs_finished = counter(
            "runs_finished", "Runs this process executed, by outcome (status `lost`: taken over)", "status", "error"
        )
        self.runs_reclaimed = counter(
            "runs_reclaimed", "Runs left running by a dead or expired owner, recorded by this process", "status"
        )
        self.adoptions = counter("adoptions", "Orphaned runs resumed here (adopted) or given up on", "result")
        self.leases_lost = counter("leases_lost", "Runs of this process taken over by another process")
        self.checkpoint_bytes = counter("checkpoint_written_bytes", "Bytes committed to the checkpoint store", "kind")
        self.storage_failures = counter("storage_failures", "Storage calls that failed", "reason")
        self.maintenance_failures = counter(
            "maintenance_failures", "Failed rounds of the background work (leases, signals, events, recovery)", "task"
        )
        self.firings = counter("schedule_firings", "Schedules' firings, by outcome (services.scheduler)", "outcome")
        self.deliveries = counter("webhook_deliveries", "Webhook calls, by outcome (services.webhooks)", "outcome")
        self.firing_lateness = Histogram(
            "sophos_schedule_lateness_seconds", LATENESS, registry=registry, buckets=LATENESS_BUCKETS
        )
        self.model_tokens_total = counter("model_tokens", "Tokens of model calls, by model and direction", "model", "direction")
        self.runs_active = Gauge("sophos_runs_active", "Runs this process is executing", registry=registry)
        self.streams_active = Gauge(
            "sophos_streams_active",
            "Event streams being followed (local run or the run event log)",
            ["source"],
            registry=registry,
        )
        self.run_seconds = Histogram(
            "sophos_run_duration_seconds", "Run duration, by outcome", ["status"], registry=registry, buckets=RUN_BUCKETS
        )
        self.model_seconds = Histogram(
            "sophos_model_call_duration_seconds",
            "Model call (one agent step) duration",
            ["model", "outcome"],
            registry=registry,
            buckets=MODEL_BUCKETS,
        )
        self.tool_seconds = Histogram(
            "sophos_tool_call_duration_seconds",
            "Tool call duration",
            ["server", "tool", "outcome"],
            registry=registry,
            buckets=TOOL_BUCKETS,
        )
        self._precreate()

    def _precreate(self) -> None:
        """Series that exist from the start, so a rate or an alert sees 0 rather than nothing."""
        for trigger in RunTrigger:
            self.runs_started.labels(trigger.value)
        for status in FINISHED:
            self.runs_finished.labels(status, "")
            self.runs_reclaimed.labels(status)
        for label in ("adopted", "gave_up"):
            self.adoptions.labels(label)
        for label in ("checkpoint", "writes"):
            self.checkpoint_bytes.labels(label)
        for label in ("busy", "error"):
            self.storage_failures.labels(label)
        for label in FIRING_OUTCOMES:
            self.firings.labels(label)
        for label in DELIVERY_OUTCOMES:
            self.deliveries.labels(label)
        for label in ("local", "log"):
            self.streams_active.labels(label)

    def render(self, accept: str | None = None) -> tuple[bytes, str]:
        """The exposition (the Prometheus text format, or OpenMetrics if `accept` asks
        for it) and its content type."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type

    def run_started(self, trigger: str) -> None:
        self.runs_started.labels(trigger).inc()
        self.runs_active.inc()

    def run_finished(self, status: str, error: str | None, seconds: float) -> None:
        self.runs_finished.labels(status, error or "").inc()
        self.runs_active.dec()
        self.run_seconds.labels(status).observe(seconds)

    def run_reclaimed(self, status: str) -> None:
        self.runs_reclaimed.labels(status).inc()

    def adoption(self, result: str) -> None:
        self.adoptions.labels(result).inc()

    def lease_lost(self) -> None:
        self.leases_lost.inc()

    def stream_opened(self, source: str) -> None:
        self.streams_active.labels(source).inc()

    def stream_closed(self, source: str) -> None:
        self.streams_active.labels(source).dec()

    def model_call(self, model: str, outcome: str, seconds: float) -> None:
        self.model_seconds.labels(model, outcome).observe(seconds)

    def model_tokens(self, model: str, input_tokens: int, output_tokens: int) -> None:
        self.model_tokens_total.labels(model, "input").inc(input_tokens)
        self.model_tokens_total.labels(model, "output").inc(output_tokens)

    def tool_call(self, tool: str, outcome: str, seconds: float) -> None:
        if tool not in self._tools:
            with self._tools_lock:
                if len(self._tools) < self.max_tool_series:
                    self._tools.add(tool)
                else:
                    tool = "other"
        server, sep, name = tool.partition(TOOL_SEP)
        if not sep:
            server, name = "", tool
        self.tool_seconds.labels(server, name, outcome).observe(seconds)

    def checkpoint_written(self, kind: str, size: int) -> None:
        self.checkpoint_bytes.labels(kind).inc(size)

    def storage_failure(self, reason: str) -> None:
        self.storage_failures.labels(reason).inc()

    def maintenance_failed(self, task: str) -> None:
        self.maintenance_failures.labels(task).inc()

    def schedule_fired(self, outcome: str, lateness: float) -> None:
        self.firings.labels(outcome).inc()
        if outcome in ("started", "queued", "redone"):
            self.firing_lateness.observe(lateness)

    def webhook_delivered(self, outcome: str) -> None:
        self.deliveries.labels(outcome).inc()
