"""The first run of a newcomer: without a model server `sophos serve` says once how to get one,
`make demo` serves the page on the offline model, and both it and `make run` serve while
another program holds the LangGraph API's port 2024 (issue 48 item 1)."""

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
from tests.support.server import LGAPI_DEFAULT, LiveServer, default_lgapi_port_taken, free_port


@pytest.fixture
def servers() -> Iterator[list[LiveServer]]:
    started: list[LiveServer] = []
    yield started
    for server in started:
        server.stop()


def warnings_about_the_model(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if "model not ready" in line]


def test_serve_without_a_model_server_warns_once_with_the_fix_and_still_serves(servers: list[LiveServer], tmp_path: Path) -> None:
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


# what `make` would rebuild first in a work tree whose files are newer than its install (a
# fresh checkout of another branch): these tests are about the recipes, tests/integration/
# test_setup.py about the install
INSTALLED = (".venv/.installed", "config/mcp-servers/node_modules/.installed", "src/entrypoints/http/web/node_modules/.installed")


def make_serves(target: str, env: dict[str, str], log: Path, port: int) -> str:
    """Run `make TARGET` until it serves the page on `port` and answers a message; what it printed."""
    full_env = {k: v for k, v in process_env(env).items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    full_env.pop("LANGGRAPH_API_PORT")  # as a person runs it: the setting is not set
    keep = [arg for stamp in INSTALLED for arg in ("-o", stamp)]
    out = log.open("w+")
    proc = subprocess.Popen(
        ["make", "-s", "--no-print-directory", *keep, target],
        cwd=ROOT,
        env=full_env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            try:
                if httpx.get(f"{url}/api/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            pytest.fail(f"make {target} did not serve")
        assert "<html" in httpx.get(url, timeout=10).text.lower()
        posted = httpx.post(f"{url}/api/chat", json={"message": "hello"}, timeout=30)
        assert posted.status_code == 200, posted.text
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)
    printed = log.read_text()
    assert f"listening on {url}" in printed
    return printed


@pytest.mark.slow
def test_make_demo_serves_the_page_on_the_offline_model_and_prints_the_url(tmp_path: Path) -> None:
    port = free_port()
    env = app_env(tmp_path, PORT=port, HOST="127.0.0.1")
    for name in ("MODEL_BACKEND", "TOOLS_BACKEND", "CONFIG_DIR"):  # make demo chooses these
        env.pop(name)
    with default_lgapi_port_taken():
        printed = make_serves("demo", env, tmp_path / "make-demo.log", port)
    assert "model not ready" not in printed
    assert "note:" not in printed  # its own flags are current ones
    assert len([line for line in printed.splitlines() if " WARNING " in line]) == 1  # LANGGRAPH_API_PORT's


@pytest.mark.slow
def test_make_run_serves_the_page_when_another_program_holds_port_2024(tmp_path: Path) -> None:
    port = free_port()
    env = app_env(tmp_path, PORT=port, HOST="127.0.0.1", MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    with default_lgapi_port_taken():
        printed = make_serves("run", env, tmp_path / "make-run.log", port)
    [warning] = [line for line in printed.splitlines() if " WARNING " in line]
    assert f"127.0.0.1:{LGAPI_DEFAULT} is in use" in warning and "LANGGRAPH_API_PORT" in warning
    assert "ADDRESS_IN_USE" not in printed
