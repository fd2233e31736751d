"""The real-model suite's servers: SmolLM2-135M-Instruct on llama.cpp's llama-server (the
OpenAI-compatible backend) and tests/support/ollama_proxy.py in front of it (the Ollama
backend), built and cached by scripts/model-server; and the timings table printed at the end.

Not installed: the suite is skipped, unless SOPHOS_TEST_MODEL=1 (`make test-model` sets it),
which makes that a failure."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.app import ROOT
from tests.support.ollama_proxy import Proxy
from tests.support.server import free_port

MODEL = "smollm2-135m"
# small and few: one thread (llama.cpp's threads wait on each other by spinning, which a loaded
# 2-core machine turns into a crawl: 2 threads measured 2 tokens/s at load 10), a 4,096-token
# window shared by 2 slots
THREADS = os.environ.get("SOPHOS_MODEL_THREADS", "1")
CONTEXT = "4096"


def paths() -> dict[str, str]:
    run = subprocess.run([str(ROOT / "scripts" / "model-server"), "paths"], capture_output=True, text=True)
    if run.returncode != 0:
        why = run.stderr.strip() or "scripts/model-server paths failed"
        if os.environ.get("SOPHOS_TEST_MODEL") == "1":
            pytest.fail(why, pytrace=False)
        pytest.skip(f"{why} (make test-model does)")
    return dict(line.split("=", 1) for line in run.stdout.split() if "=" in line)


class LlamaServer:
    """llama-server on a fixed port, so that it can be killed and started again in place."""

    def __init__(self, found: dict[str, str], log: Path) -> None:
        self.found = found
        self.port = free_port()
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 60) -> LlamaServer:
        # the tool-capable template (Qwen2.5's is ChatML, as SmolLM2's own): tools reach the prompt
        cmd = [
            self.found["SOPHOS_LLAMA_SERVER"],
            "-m",
            self.found["SOPHOS_MODEL_GGUF"],
            "--alias",
            MODEL,
            "-c",
            CONTEXT,
            "-np",
            "2",
            "-t",
            THREADS,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--jinja",
            "--chat-template-file",
            self.found["SOPHOS_LLAMA_TOOL_TEMPLATE"],
            "--no-webui",
            # greedy: the same prompt gets the same answer, so a test of what the model says
            # from a passage checks Sophos, not a draw of the sampler
            "--temp",
            "0",
        ]
        out = self.log.open("ab")
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=out)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited: {self.log.read_text()[-3000:]}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("llama-server did not start")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    found = paths()
    server = LlamaServer(found, tmp_path_factory.mktemp("llama") / "llama-server.log")
    t0 = time.monotonic()
    server.start()
    TIMINGS.notes.append(f"llama-server ready in {time.monotonic() - t0:.1f} s ({THREADS} threads, n_ctx {CONTEXT})")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def ollama_proxy(llama: LlamaServer) -> Iterator[Proxy]:
    proxy = Proxy(llama.url).start()
    try:
        yield proxy
    finally:
        proxy.stop()


@dataclass
class Timing:
    scenario: str
    backend: str
    server: str  # "real" or "fake"
    first_token: float | None
    tokens: int  # token events streamed (each one chunk of the model server's stream)
    seconds: float
    last_token: float = 0.0

    @property
    def rate(self) -> float | None:
        if self.first_token is None or self.tokens < 2:
            return None
        streaming = self.last_token - self.first_token
        return (self.tokens - 1) / streaming if streaming > 0 else None


class Timings:
    def __init__(self) -> None:
        self.rows: list[Timing] = []
        self.notes: list[str] = []

    def table(self) -> list[str]:
        lines = [f"{'scenario':<34} {'backend':<7} {'server':<5} {'first token':>11} {'tokens':>6} {'tokens/s':>9} {'total':>7}"]
        for t in sorted(self.rows, key=lambda r: (r.scenario, r.backend, r.server)):
            first = f"{t.first_token:.2f} s" if t.first_token is not None else "-"
            rate = f"{t.rate:.0f}" if t.rate is not None else "-"
            lines.append(f"{t.scenario:<34} {t.backend:<7} {t.server:<5} {first:>11} {t.tokens:>6} {rate:>9} {t.seconds:>6.2f}s")
        return lines


TIMINGS = Timings()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not TIMINGS.rows and not TIMINGS.notes:
        return
    terminalreporter.section("real model (SmolLM2-135M on llama-server) beside the fakes")
    for line in TIMINGS.table():
        terminalreporter.write_line(line)
    for note in TIMINGS.notes:
        terminalreporter.write_line(f"note: {note}")
