"""Arize Phoenix, a real trace receiver and viewer, for `make test-phoenix` (issue 47).

Phoenix (`arize-phoenix` from PyPI, the version in tests/support/phoenix-requirements.txt) is
large (about 850 MB with its dependencies, some 10 minutes to install on a loaded machine), so
it goes into a venv of its own in a cache outside the work tree (SOPHOS_PHOENIX_CACHE,
default ~/.cache/sophos-phoenix), never into .venv, installed the first time it is needed.
`phoenix serve` runs with its own SQLite file in a temporary directory; its OTLP/HTTP receiver
is at {url}/v1/traces and its REST API lists a project's spans (GET /v1/projects/default/spans).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.support.app import ROOT
from tests.support.server import free_port

REQUIREMENTS = ROOT / "tests" / "support" / "phoenix-requirements.txt"
CACHE = Path(os.environ.get("SOPHOS_PHOENIX_CACHE", Path.home() / ".cache" / "sophos-phoenix"))


def phoenix_bin() -> Path:
    """The `phoenix` command of the pinned version, installed into the cache once."""
    pinned = REQUIREMENTS.read_text().split()[0]
    venv = CACHE / pinned.replace("==", "-")
    command = venv / "bin" / "phoenix"
    if not command.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        pip = [str(venv / "bin" / "pip"), "--disable-pip-version-check", "-q", "install", "-r", str(REQUIREMENTS)]
        done = subprocess.run(pip, capture_output=True, text=True, timeout=3600)
        if done.returncode != 0:
            raise RuntimeError(f"installing {pinned} failed: {done.stderr[-2000:]}")
    return command


class Phoenix:
    def __init__(self, work: Path) -> None:
        self.port = free_port()
        self.work = work
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 180) -> Phoenix:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.work),
            "PHOENIX_WORKING_DIR": str(self.work),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(free_port()),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        with (self.work / "phoenix.log").open("ab") as out:
            self.proc = subprocess.Popen([str(phoenix_bin()), "serve"], env=env, stdout=out, stderr=out)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"phoenix exited: {(self.work / 'phoenix.log').read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError("phoenix did not start")

    def spans(self, project: str = "default") -> list[dict[str, Any]]:
        """Every span of `project`, through Phoenix's REST API."""
        found: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
            r = httpx.get(f"{self.url}/v1/projects/{project}/spans", params=params, timeout=30)
            if r.status_code == 404:  # no span yet: no project yet
                return found
            r.raise_for_status()
            body = r.json()
            found += body["data"]
            cursor = body.get("next_cursor")
            if not cursor:
                return found

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextmanager
def phoenix(work: Path) -> Iterator[Phoenix]:
    server = Phoenix(work).start()
    try:
        yield server
    finally:
        server.stop()
