"""The MetricsPort contract, run against every adapter: what a recorded event reads back as
(through a reader per adapter, since the port itself only records)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from adapters.memory.metrics import InMemoryMetrics
from adapters.prometheus.metrics import PrometheusMetrics
from ports.metrics import UNKNOWN_TOOL, MetricsPort

# reader(figure, labels) -> value. Figures: counters and gauges by name; `model_calls`,
# `tool_calls` and `run_durations` count the observations of a histogram series.
Reader = Callable[[str, tuple[str, ...]], float]


class MetricsContract:
    @pytest.fixture
    def adapter(self) -> tuple[MetricsPort, Reader]:
        raise NotImplementedError

    def test_a_run_is_active_until_it_finishes_then_counted_by_outcome(self, adapter: tuple[MetricsPort, Reader]) -> None:
        metrics, read = adapter
        metrics.run_started("user")
        metrics.run_started("adopt")
        assert read("runs_active", ()) == 2
        metrics.run_finished("completed", None, 1.5)
        metrics.run_finished("failed", "MODEL_UNREACHABLE", 0.2)
        assert read("runs_active", ()) == 0
        assert read("runs_started", ("user",)) == read("runs_started", ("adopt",)) == 1
        assert read("runs_finished", ("completed", "")) == 1
        assert read("runs_finished", ("failed", "MODEL_UNREACHABLE")) == 1
        assert read("run_durations", ("completed",)) == 1

    def test_streams_are_active_between_open_and_close_per_source(self, adapter: tuple[MetricsPort, Reader]) -> None:
        metrics, read = adapter
        metrics.stream_opened("local")
        metrics.stream_opened("local")
        metrics.stream_opened("log")
        metrics.stream_closed("local")
        assert (read("streams_active", ("local",)), read("streams_active", ("log",))) == (1, 1)

    def test_calls_are_observed_per_model_and_tool_with_their_outcome(self, adapter: tuple[MetricsPort, Reader]) -> None:
        metrics, read = adapter
        metrics.model_call("qwen3", "ok", 0.8)
        metrics.model_call("qwen3", "error", 0.01)
        metrics.tool_call("ledger__append", "ok", 0.02)
        metrics.tool_call(UNKNOWN_TOOL, "error", 0.0)
        assert read("model_calls", ("qwen3", "ok")) == read("model_calls", ("qwen3", "error")) == 1
        assert read("tool_calls", ("ledger__append", "ok")) == read("tool_calls", (UNKNOWN_TOOL, "error")) == 1

    def test_counters_add_up_by_label(self, adapter: tuple[MetricsPort, Reader]) -> None:
        metrics, read = adapter
        metrics.checkpoint_written("checkpoint", 1000)
        metrics.checkpoint_written("checkpoint", 24)
        metrics.checkpoint_written("writes", 7)
        metrics.run_reclaimed("interrupted")
        metrics.adoption("adopted")
        metrics.adoption("gave_up")
        metrics.lease_lost()
        metrics.storage_failure("busy")
        metrics.maintenance_failed("flush")
        assert read("checkpoint_bytes", ("checkpoint",)) == 1024 and read("checkpoint_bytes", ("writes",)) == 7
        assert read("runs_reclaimed", ("interrupted",)) == 1
        assert read("adoptions", ("adopted",)) == read("adoptions", ("gave_up",)) == 1
        assert read("leases_lost", ()) == 1
        assert read("storage_failures", ("busy",)) == 1 and read("storage_failures", ("error",)) == 0
        assert read("maintenance_failures", ("flush",)) == 1

    def test_recording_from_many_threads_loses_nothing(self, adapter: tuple[MetricsPort, Reader]) -> None:
        metrics, read = adapter

        def write() -> None:  # as the checkpointer does, from its own thread
            for _ in range(2000):
                metrics.checkpoint_written("writes", 1)

        threads = [threading.Thread(target=write) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert read("checkpoint_bytes", ("writes",)) == 8000


class TestInMemoryMetrics(MetricsContract):
    @pytest.fixture
    def adapter(self) -> tuple[MetricsPort, Reader]:
        metrics = InMemoryMetrics()
        histograms = {"model_calls": "model_call", "tool_calls": "tool_call", "run_durations": "run_duration"}

        def read(figure: str, labels: tuple[str, ...]) -> float:
            if figure in histograms:
                return len(metrics.observed[histograms[figure]].get(labels, []))
            return metrics.counts[figure].get(labels, 0.0)

        return metrics, read


PROMETHEUS: dict[str, tuple[str, tuple[str, ...]]] = {
    "runs_started": ("sophos_runs_started_total", ("trigger",)),
    "runs_finished": ("sophos_runs_finished_total", ("status", "error")),
    "runs_active": ("sophos_runs_active", ()),
    "run_durations": ("sophos_run_duration_seconds_count", ("status",)),
    "runs_reclaimed": ("sophos_runs_reclaimed_total", ("status",)),
    "adoptions": ("sophos_adoptions_total", ("result",)),
    "leases_lost": ("sophos_leases_lost_total", ()),
    "streams_active": ("sophos_streams_active", ("source",)),
    "model_calls": ("sophos_model_call_duration_seconds_count", ("model", "outcome")),
    "checkpoint_bytes": ("sophos_checkpoint_written_bytes_total", ("kind",)),
    "storage_failures": ("sophos_storage_failures_total", ("reason",)),
    "maintenance_failures": ("sophos_maintenance_failures_total", ("task",)),
}


class TestPrometheusMetrics(MetricsContract):
    @pytest.fixture
    def adapter(self) -> tuple[MetricsPort, Reader]:
        metrics = PrometheusMetrics()

        def read(figure: str, labels: tuple[str, ...]) -> float:
            if figure == "tool_calls":  # `<server>__<tool>` becomes two labels
                tool, outcome = labels
                server, _, short = tool.rpartition("__")
                sample, keys = "sophos_tool_call_duration_seconds_count", {"server": server, "tool": short, "outcome": outcome}
            else:
                sample, names = PROMETHEUS[figure]
                keys = dict(zip(names, labels, strict=True))
            return metrics.registry.get_sample_value(sample, keys) or 0.0

        return metrics, read
