"""A tool server that hangs, prints garbage or is misconfigured stalls nothing but itself."""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.mcp.toolbox import McpToolbox
from tests.support.app import app_env, config_dir, ledger_server_entry
from tests.support.fake_ollama import fake_ollama
from tests.support.server import LiveServer, stream

GARBAGE = "import sys, time\nwhile True:\n    print('this is not json-rpc', flush=True)\n    time.sleep(0.01)\n"


def bad_servers(tmp_path: Path, marker: str) -> dict[str, Any]:
    return {
        "ledger": ledger_server_entry(tmp_path / "l.jsonl"),
        "hung": {"command": "sleep", "args": [marker]},  # never answers `initialize`
        "garbage": {"command": sys.executable, "args": ["-c", GARBAGE]},
        "broken": {"command": 5},  # one bad entry: that server only
        "missing": {"command": "/nonexistent/mcp-server"},
    }


def alive_with(arg: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and arg in (entry / "cmdline").read_bytes().decode(errors="replace").split("\0"):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def gone(marker: str) -> None:
    for _ in range(50):
        if not alive_with(marker):
            return
        time.sleep(0.1)
    raise AssertionError("closing the toolbox stops every server process")


async def timed(coro: Any) -> tuple[Any, float]:
    t0 = time.monotonic()
    result = await coro
    return result, time.monotonic() - t0


async def test_hung_garbage_and_bad_servers_never_stall_listing_calls_or_status(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    marker = f"600.{uuid.uuid4().int % 10**6}"  # a unique `sleep` argument to find the process by
    cfg = config_dir(tmp_path, bad_servers(tmp_path, marker))
    box = McpToolbox(cfg, tmp_path / "m.jsonl", retry_after=0.2, first_wait=15, start_timeout=4)
    caplog.set_level(logging.INFO)
    try:
        tools, took = await timed(box.list_tools())
        assert {t.name.split("__")[0] for t in tools} == {"ledger"}
        assert took < 16, took  # at most the first-attempt grace, once
        deadline = time.monotonic() + 6  # several failed attempts of the bad servers meanwhile
        rounds = 0
        while time.monotonic() < deadline:
            _, took = await timed(box.list_tools())
            assert took < 0.5, f"listing waited {took:.2f} s"
            outcome, took = await timed(box.call("ledger__whoami", {}, "k"))
            assert not outcome.is_error and took < 1.5, f"a call waited {took:.2f} s"
            statuses, took = await timed(box.status())
            assert took < 0.2, f"status waited {took:.2f} s"
            rounds += 1
            time.sleep(0.3)  # a blocking pause: the supervisors' retries pile up
            await box.list_tools()
        assert rounds >= 3
        status = {s.name: s for s in statuses}
        assert status["ledger"].ok and not any(status[n].ok for n in ("hung", "garbage", "broken", "missing"))
        assert status["broken"].error == "invalid entry in mcp.json (details in the log)"
        assert "its command was not found" in str(status["missing"].error)
        assert "nonexistent" not in str(status["missing"].error) and "Error" not in str(status["missing"].error)
        assert alive_with(marker), "the hung server is being tried"
        outcome = await box.call("hung__anything", {}, "k")
        assert outcome.is_error
    finally:
        await box.aclose()
    gc.collect()
    text = caplog.text
    assert "never retrieved" not in text
    parse_errors = [r for r in caplog.records if "not JSON-RPC" in r.getMessage()]
    assert 1 <= len(parse_errors) <= 2 and all(r.exc_info is None for r in parse_errors)
    gone(marker)


@pytest.mark.slow
def test_a_served_run_and_readyz_do_not_wait_on_a_hung_tool_server(tmp_path: Path) -> None:
    marker = f"600.{uuid.uuid4().int % 10**6}"
    config_dir(tmp_path, bad_servers(tmp_path, marker))
    replies = [{"tool_calls": [("ledger__whoami", {})]}, {"text": "done"}] * 2
    with fake_ollama(replies) as fake:
        server = LiveServer(app_env(tmp_path, fake.url, MCP_START_TIMEOUT="5"), tmp_path).start()
        try:
            for _ in range(2):
                t0 = time.monotonic()
                ready = server.get("/api/readyz")
                took = time.monotonic() - t0
                assert took < 3, f"readyz took {took:.1f} s"  # READY_TIMEOUT is 1.5 s; the machine is loaded
                assert ready.status_code == 200, ready.text
                servers = {s["name"]: s for s in ready.json()["tools"]}
                assert not servers["hung"]["ok"] and "nonexistent" not in ready.text and "Error" not in ready.text
                t0 = time.monotonic()
                cid = server.post("/api/chat", {"message": "who"}).json()["conversation"]
                events = stream(server, cid)
                took = time.monotonic() - t0
                assert events[-1][1] == "end" and events[-1][2]["status"] == "completed", events
                assert took < 10, f"a run took {took:.1f} s"
                time.sleep(1.0)
            assert len(fake.requests) == 4
            assert "ledger__whoami" in {t["function"]["name"] for t in fake.requests[-1]["tools"]}
        finally:
            server.stop()
    log = server.log.read_text()
    assert "never retrieved" not in log and "Traceback" not in log, log[-3000:]
    gone(marker)


def test_readyz_answers_in_time_when_the_model_server_stalls(tmp_path: Path) -> None:
    with socket.socket() as stalled:  # accepts connections (the backlog), never answers
        stalled.bind(("127.0.0.1", 0))
        stalled.listen(8)
        url = f"http://127.0.0.1:{stalled.getsockname()[1]}"
        server = LiveServer(app_env(tmp_path, url, TOOLS_BACKEND="none"), tmp_path).start()
        try:
            t0 = time.monotonic()
            ready = httpx.get(f"{server.url}/api/readyz", timeout=30)
            assert time.monotonic() - t0 < 2.5
            assert ready.status_code == 503 and "did not answer" in ready.json()["message"]
        finally:
            server.stop()


async def test_a_failing_server_is_retried_with_a_back_off_counted_from_the_end_of_each_attempt(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    marker = f"600.{uuid.uuid4().int % 10**6}"
    hung = {"command": "sh", "args": ["-c", f'date +%s.%N >> "{starts}"; exec sleep {marker}']}
    box = McpToolbox(config_dir(tmp_path, {"hung": hung}), tmp_path / "m.jsonl", retry_after=0.5, first_wait=0, start_timeout=1)
    try:
        await box.warm_up()
        await asyncio.sleep(6)
    finally:
        await box.aclose()
    times = [float(x) for x in starts.read_text().split()]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert 2 <= len(times) <= 4, times
    for k, gap in enumerate(gaps, 1):  # attempt k lasts 1 s, then 0.5 s x 2^(k-1) of back-off
        assert gap >= 1 + 0.5 * 2 ** (k - 1) - 0.1, gaps
    gone(marker)
