"""What a Sophos process loads. httpx imports its command-line client (and with it rich and
pygments, ~3 MB of RSS) whenever they are installed; only dev tools bring them, and those are
locked apart, so the venv `make run` builds never has them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys
import entrypoints.cli, entrypoints.server, adapters.ollama.model
import httpx
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"aiohttp"})
print(",".join(loaded) or "-")
print(httpx.Client().build_request("GET", "http://127.0.0.1/x").url)
"""


def _locked(path: Path) -> set[str]:
    names = (re.match(r"^([A-Za-z0-9_.-]+)==", line) for line in path.read_text().splitlines())
    return {m.group(1).lower().replace("_", "-") for m in names if m}


def test_the_runtime_lock_has_no_httpx_cli_dependencies() -> None:
    runtime = _locked(ROOT / "requirements.lock")
    assert "httpx" in runtime
    assert not runtime & {"rich", "pygments"}, "a served process would load httpx's CLI"
    # the dev tools that bring them are locked apart, where their RSS does not reach `make run`
    assert {"rich", "pygments"} <= _locked(ROOT / "requirements-dev.lock")


def test_the_cli_and_server_load_no_aiohttp_and_httpx_works() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == ["-", "http://127.0.0.1/x"]


SAVERS = """
import sys
import adapters.sqlite.backend, adapters.postgres.backend, adapters.memory.backend
print(",".join(sorted({"adapters.langgraph.graph", "services.approvals", "services.prompting"} & set(sys.modules))) or "-")
"""


def test_a_storage_backend_and_its_saver_load_without_the_agent_graph() -> None:
    # the savers share the graph's names (adapters/langgraph/keys.py), not its module: a read
    # command opens storage without importing the agent and the use cases it runs
    out = subprocess.run(
        [sys.executable, "-c", SAVERS],
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == ["-"]
