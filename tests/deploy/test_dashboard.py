"""deploy/grafana/sophos.json: every panel's query names metrics that Sophos really exports,
with labels they really have (a renamed metric would leave a panel silently empty)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prometheus_client.metrics_core import Metric

from adapters.prometheus.metrics import PrometheusMetrics

DASHBOARD = Path(__file__).parents[2] / "deploy" / "grafana" / "sophos.json"
METRIC = re.compile(r"\b(?:sophos|process|python)_[a-z0-9_]+\b")
GROUPING = re.compile(r"\bby\s*\(([^)]*)\)")
MATCHERS = re.compile(r"\{([^}]*)\}")
# added by Prometheus (instance, job) or by the histogram's series (le)
SCRAPE_LABELS = {"instance", "job", "le"}


def exported() -> dict[str, set[str]]:
    """Every series name in the registry (counters end in _total, histograms are three series),
    with the labels it carries, from the families themselves: a labelled family with no child
    yet still has its names and label names."""
    metrics = PrometheusMetrics()
    names: dict[str, set[str]] = {}
    for family in metrics.registry.collect():
        labels = _labels(metrics, family)
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}.get(family.type, [""])
        for suffix in suffixes:
            names[family.name + suffix] = labels | ({"le"} if suffix == "_bucket" else set())
    return names


def _labels(metrics: PrometheusMetrics, family: Metric) -> set[str]:
    for collector in vars(metrics).values():
        if getattr(collector, "_name", None) == family.name:
            return set(collector._labelnames)
    return {label for sample in family.samples for label in sample.labels}


def targets() -> list[tuple[str, str]]:
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return [(panel["title"], t["expr"]) for panel in dashboard["panels"] for t in panel.get("targets", [])]


def test_every_query_names_exported_metrics_and_their_labels() -> None:
    series = exported()
    assert "sophos_runs_started_total" in series and "sophos_run_duration_seconds_bucket" in series
    problems = []
    for title, expr in targets():
        used = set(METRIC.findall(expr))
        if not used:
            problems.append(f"{title}: no Sophos metric in {expr!r}")
        for name in used - series.keys():
            problems.append(f"{title}: {name} is not exported")
        known = set().union(*(series.get(n, set()) for n in used)) | SCRAPE_LABELS
        grouped = {label.strip() for group in GROUPING.findall(expr) for label in group.split(",") if label.strip()}
        matched = {
            m.split("=")[0].strip().rstrip("!~") for group in MATCHERS.findall(expr) for m in group.split(",") if m.strip()
        }
        for label in (grouped | matched) - known:
            problems.append(f"{title}: label {label!r} is not on {sorted(used)}")
    assert not problems, "\n".join(problems)


def test_the_dashboard_covers_runs_latencies_leases_adoptions_and_storage_failures() -> None:
    used = {name for _, expr in targets() for name in METRIC.findall(expr)}
    for needed in (
        "sophos_runs_started_total",
        "sophos_runs_finished_total",
        "sophos_runs_active",
        "sophos_run_duration_seconds_bucket",
        "sophos_model_call_duration_seconds_bucket",
        "sophos_tool_call_duration_seconds_bucket",
        "sophos_leases_lost_total",
        "sophos_runs_reclaimed_total",
        "sophos_adoptions_total",
        "sophos_storage_failures_total",
    ):
        assert needed in used, needed


def test_the_check_catches_a_renamed_metric() -> None:
    """The check itself can fail: the name a panel would have kept after a rename is refused."""
    assert "sophos_runs_total" not in exported()
    assert "sophos_leases_lost" not in exported()  # a counter is exported with _total
