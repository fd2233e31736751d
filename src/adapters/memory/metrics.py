"""MetricsPort in memory: every count and observation kept as plain values, for tests."""

from __future__ import annotations

import threading
from collections import defaultdict

from ports.metrics import MetricsPort

Key = tuple[str, ...]


class InMemoryMetrics(MetricsPort):
    """`counts[name][labels]` for counters and gauges, `observed[name][labels]` the
    durations seen, in order. Names follow the Prometheus adapter's, without the prefix."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the checkpointer records from its own thread
        self.counts: defaultdict[str, defaultdict[Key, float]] = defaultdict(lambda: defaultdict(float))
        self.observed: defaultdict[str, defaultdict[Key, list[float]]] = defaultdict(lambda: defaultdict(list))

    def _add(self, name: str, labels: Key, amount: float = 1) -> None:
        with self._lock:
            self.counts[name][labels] += amount

    def _observe(self, name: str, labels: Key, seconds: float) -> None:
        with self._lock:
            self.observed[name][labels].append(seconds)

    def run_started(self, trigger: str) -> None:
        self._add("runs_started", (trigger,))
        self._add("runs_active", ())

    def run_finished(self, status: str, error: str | None, seconds: float) -> None:
        self._add("runs_finished", (status, error or ""))
        self._add("runs_active", (), -1)
        self._observe("run_duration", (status,), seconds)

    def run_reclaimed(self, status: str) -> None:
        self._add("runs_reclaimed", (status,))

    def adoption(self, result: str) -> None:
        self._add("adoptions", (result,))

    def lease_lost(self) -> None:
        self._add("leases_lost", ())

    def stream_opened(self, source: str) -> None:
        self._add("streams_active", (source,))

    def stream_closed(self, source: str) -> None:
        self._add("streams_active", (source,), -1)

    def model_call(self, model: str, outcome: str, seconds: float) -> None:
        self._observe("model_call", (model, outcome), seconds)

    def model_tokens(self, model: str, input_tokens: int, output_tokens: int) -> None:
        self._add("model_tokens", (model, "input"), input_tokens)
        self._add("model_tokens", (model, "output"), output_tokens)

    def tool_call(self, tool: str, outcome: str, seconds: float) -> None:
        self._observe("tool_call", (tool, outcome), seconds)

    def checkpoint_written(self, kind: str, size: int) -> None:
        self._add("checkpoint_bytes", (kind,), size)

    def storage_failure(self, reason: str) -> None:
        self._add("storage_failures", (reason,))

    def maintenance_failed(self, task: str) -> None:
        self._add("maintenance_failures", (task,))

    def schedule_fired(self, outcome: str, lateness: float) -> None:
        self._add("schedule_firings", (outcome,))
        self._observe("schedule_lateness", (outcome,), lateness)

    def webhook_delivered(self, outcome: str) -> None:
        self._add("webhook_deliveries", (outcome,))
