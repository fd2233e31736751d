"""What a Sophos process loads: not httpx's command-line client (rich, pygments), although the
dev tools install them, and httpx still works without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

PROBE = """
import sys
import entrypoints.cli, entrypoints.server, adapters.ollama.model
import httpx
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"rich", "pygments", "aiohttp"})
print(",".join(loaded) or "-")
print(httpx.Client().build_request("GET", "http://127.0.0.1/x").url)
"""


def test_the_cli_and_server_load_no_httpx_cli_and_httpx_still_works() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], env={"PYTHONPATH": str(SRC), "PATH": ""},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["-", "http://127.0.0.1/x"]


def test_without_the_guard_httpx_would_load_its_cli() -> None:
    """The guard is what keeps rich out: were httpx to stop importing its CLI, this fails
    and the guard can go."""
    code = "import sys, httpx; print('rich' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"
