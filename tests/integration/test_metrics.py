"""GET /metrics: a real `sophos serve` runs a chat on the fake model with a real MCP tool
server, and its Prometheus figures move; the Prometheus adapter on its own."""

from __future__ import annotations

import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from adapters.memory.metrics import InMemoryMetrics
from adapters.prometheus.metrics import PrometheusMetrics
from adapters.sqlite.runs import SqliteRunStore
from domain.errors import StorageFailure
from domain.model import new_id, utc_now
from tests.support.app import SOPHOS, app_env, config_dir, ledger_server_entry, process_env
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.server import LiveServer, sse_events

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value for family in text_string_to_metric_families(text) for s in family.samples
    }


def value(text: str, name: str, **labels: str) -> float:
    """One sample's value; 0 when the series does not exist (yet)."""
    return samples(text).get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[LiveServer, FakeOllama]]:
    config_dir(tmp_path, {"ledger": ledger_server_entry(tmp_path / "ledger.jsonl")})
    with fake_ollama() as ollama:
        live = LiveServer(app_env(tmp_path, ollama.url, API_TOKEN=TOKEN), tmp_path).start()
        try:
            yield live, ollama
        finally:
            live.stop()


def test_a_chat_moves_the_servers_metrics_behind_the_api_token_and_host_check(
    server: tuple[LiveServer, FakeOllama],
) -> None:
    live, ollama = server
    refused = live.get("/metrics")
    assert (refused.status_code, refused.json()["error"]["code"]) == (401, "UNAUTHORIZED")
    rebound = live.get("/metrics", headers={**AUTH, "Host": "evil.example"})
    assert (rebound.status_code, rebound.json()["error"]["code"]) == (400, "HOST_NOT_ALLOWED")
    before = live.get("/metrics", headers=AUTH)
    assert before.status_code == 200 and before.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert value(before.text, "sophos_runs_finished_total", status="completed", error="") == 0
    assert value(before.text, "process_open_fds") > 0  # the process collector is there too

    ollama.add(
        {"tool_calls": [("ledger__append", {"label": "x"})]},
        {"text": "one two three four five six seven eight", "token_delay": 0.25},
    )
    cid = live.post("/api/chat", {"message": "use the ledger"}, headers=AUTH).json()["conversation"]
    with httpx.stream("GET", f"{live.url}/api/chat", params={"conversation": cid}, headers=AUTH, timeout=30) as r:
        events = sse_events(r)
        next(e for e in events if e[1] == "token")
        during = live.get("/metrics", headers=AUTH).text  # seven tokens, 1.75 s, still to come
        rest = list(events)
    assert rest[-1][1:] == ("end", {"conversation": cid, "status": "completed"})
    assert value(during, "sophos_streams_active", source="local") == 1
    assert value(during, "sophos_runs_active") == 1

    deadline = time.monotonic() + 10
    after = live.get("/metrics", headers=AUTH).text
    while value(after, "sophos_streams_active", source="local") != 0 and time.monotonic() < deadline:
        time.sleep(0.05)  # the server closes its side of the stream just after the last event
        after = live.get("/metrics", headers=AUTH).text
    assert value(after, "sophos_streams_active", source="local") == 0
    assert value(after, "sophos_runs_active") == 0
    assert value(after, "sophos_runs_started_total", trigger="user") == 1
    assert value(after, "sophos_runs_finished_total", status="completed", error="") == 1
    assert value(after, "sophos_run_duration_seconds_count", status="completed") == 1
    assert value(after, "sophos_run_duration_seconds_sum", status="completed") >= 1.75  # eight tokens 0.25 s apart
    assert value(after, "sophos_model_call_duration_seconds_count", model="qwen3", outcome="ok") == 2
    tool = {"server": "ledger", "tool": "append", "outcome": "ok"}
    assert value(after, "sophos_tool_call_duration_seconds_count", **tool) == 1
    assert value(after, "sophos_checkpoint_written_bytes_total", kind="checkpoint") > 1000
    assert value(after, "sophos_checkpoint_written_bytes_total", kind="writes") > 0
    assert value(after, "sophos_storage_failures_total", reason="busy") == 0


def test_each_adapter_has_its_own_registry_and_tool_labels_are_capped() -> None:
    one, two = PrometheusMetrics(max_tool_series=2), PrometheusMetrics()
    for name in ("a__x", "a__y", "b__z", "c__w"):
        one.tool_call(name, "ok", 0.01)
    one.run_started("user")
    text = one.render()[0].decode()
    count = "sophos_tool_call_duration_seconds_count"
    assert value(text, count, server="a", tool="x", outcome="ok") == 1
    assert value(text, count, server="a", tool="y", outcome="ok") == 1
    assert value(text, count, server="", tool="other", outcome="ok") == 2  # past the cap
    assert value(text, "sophos_runs_active") == 1
    assert value(two.render()[0].decode(), "sophos_runs_active") == 0  # nothing shared


def test_openmetrics_is_served_to_a_scraper_that_asks_for_it() -> None:
    body, content_type = PrometheusMetrics().render("application/openmetrics-text; version=1.0.0")
    assert content_type.startswith("application/openmetrics-text")
    assert body.rstrip().endswith(b"# EOF")


async def test_storage_failures_are_counted_as_busy_or_error(tmp_path: Path) -> None:
    db = str(tmp_path / "sophos.db")
    SqliteRunStore(db).close()  # create and migrate the file
    metrics = InMemoryMetrics()
    store = SqliteRunStore(db, busy_timeout=0.1, metrics=metrics)
    readonly = SqliteRunStore(f"file:{db}?mode=ro", metrics=metrics)
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        with pytest.raises(StorageFailure):
            await store.create_conversation(new_id(), "t", utc_now())
        holder.execute("ROLLBACK")
        with pytest.raises(StorageFailure):
            await readonly.create_conversation(new_id(), "t", utc_now())
        await store.create_conversation(new_id(), "fine", utc_now())
    finally:
        holder.close()
        store.close()
        readonly.close()
    assert metrics.counts["storage_failures"] == {("busy",): 1, ("error",): 1}


def test_one_shot_commands_never_load_the_metrics_library(tmp_path: Path) -> None:
    probe = (
        "import sys; from entrypoints.cli import main\n"
        "try:\n    main(['--model', 'demo', '--tools', 'none', 'conversations'])\n"
        "except SystemExit:\n    pass\n"
        "sys.stderr.write(str('prometheus_client' in sys.modules))"
    )
    python = str(Path(SOPHOS).parent / "python")
    env = process_env(app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none"))
    done = subprocess.run([python, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.stderr.endswith("False"), done.stderr
