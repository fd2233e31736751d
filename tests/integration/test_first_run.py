"""The first run of a newcomer: without a model server `sophos serve` says once how to get one,
and `make demo` serves the page on the offline model."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.app import ROOT, app_env, process_env
from tests.support.server import LiveServer, free_port


@pytest.fixture
def servers() -> Iterator[list[LiveServer]]:
    started: list[LiveServer] = []
    yield started
    for server in started:
        server.stop()


def warnings_about_the_model(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if "model not ready" in line]


def test_serve_without_a_model_server_warns_once_with_the_fix_and_still_serves(
    servers: list[LiveServer], tmp_path: Path
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    server = LiveServer(app_env(tmp_path, closed, TOOLS_BACKEND="none"), tmp_path).start()
    servers.append(server)

    assert server.get("/api/healthz").status_code == 200
    assert server.get("/api/readyz").status_code == 503  # the readiness route is unchanged
    server.stop()

    [line] = warnings_about_the_model(server.log)
    assert " WARNING " in line
    assert closed in line
    for fix in ("`ollama serve`", "`ollama pull qwen3`", "OLLAMA_HOST", "`make demo`"):
        assert fix in line


def test_serve_on_the_demo_model_does_not_warn(servers: list[LiveServer], tmp_path: Path) -> None:
    server = LiveServer(app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none"), tmp_path).start()
    servers.append(server)
    assert server.get("/api/readyz").status_code == 200
    server.stop()
    assert warnings_about_the_model(server.log) == []


@pytest.mark.slow
def test_make_demo_serves_the_page_on_the_offline_model_and_prints_the_url(tmp_path: Path) -> None:
    port = free_port()
    env = app_env(tmp_path, PORT=port, HOST="127.0.0.1")
    for name in ("MODEL_BACKEND", "TOOLS_BACKEND", "CONFIG_DIR"):  # make demo chooses these
        env.pop(name)
    full_env = {k: v for k, v in process_env(env).items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    out = (tmp_path / "make-demo.log").open("w+")
    proc = subprocess.Popen(["make", "-s", "--no-print-directory", "demo"], cwd=ROOT, env=full_env,
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert proc.poll() is None, (tmp_path / "make-demo.log").read_text()
            try:
                if httpx.get(f"{url}/api/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            pytest.fail("make demo did not serve")
        assert "<html" in httpx.get(url, timeout=10).text.lower()
        posted = httpx.post(f"{url}/api/chat", json={"message": "hello"}, timeout=30)
        assert posted.status_code == 200, posted.text
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)
    printed = (tmp_path / "make-demo.log").read_text()
    assert f"listening on {url}" in printed
    assert "model not ready" not in printed
