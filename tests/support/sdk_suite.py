"""LangGraph's own integration suite, run unchanged against a server that hosts the suite's
own graphs (issue 44).

The suite is langgraph-sdk's `tests/integration/` (55 tests): it ships in the sdist on PyPI,
fetched once (pinned by hash, tests/support/langgraph-sdk-sdist.txt) into a cache outside the
work tree. Its graphs (`integration/langgraph.json`: agent, tools_agent, deep_agent,
factory_agent) import `langchain` and `deepagents`, installed from
tests/support/graph-suite-requirements.txt (by hash, --no-deps) into a directory of the cache
that goes on the server's PYTHONPATH: never into .venv or the peer's venv.

Five tests (test_remote_graph_v3.py) hard-code http://localhost:2024, and another process may
hold 2024 on the machine, so the server and the suite's pytest run together in a private
network namespace (`unshare --net`, `--map-root-user` when not root) whose loopback this module
brings up: there the server owns 2024. The servers:
- `sophos`: `sophos serve --langgraph-json <the suite's langgraph.json>` from this tree (demo
  model, no tools, a fresh SQLite file), its LangGraph API on 2024;
- `langgraph-dev`: `langgraph dev` from .bench-venv (`make bench-peers` builds it from
  bench/peer/requirements.txt: langgraph-cli[inmem], pinned), run in a copy of the
  integration directory, as its docs say.
Outcomes are read from pytest's JUnit XML: `test_runs.py::test_x` -> passed, failed, error or
skipped.

Usage: python -m tests.support.sdk_suite {sophos,langgraph-dev} [TEST ...]   (prints the outcomes)
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import httpx

from tests.support.app import ROOT, SOPHOS, app_env

PINNED = ROOT / "tests" / "support" / "langgraph-sdk-sdist.txt"
GRAPH_REQUIREMENTS = ROOT / "tests" / "support" / "graph-suite-requirements.txt"
CACHE = Path(os.environ.get("SOPHOS_SDK_SUITE_CACHE", Path.home() / ".cache" / "sophos-sdk-suite"))
PEER_VENV = ROOT / ".bench-venv"
PORT = 2024  # the port test_remote_graph_v3.py names
SERVERS = ("sophos", "langgraph-dev")
OUTCOMES = ("passed", "failed", "error", "skipped")


def _pip(*args: str, timeout: float = 900) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args], capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise RuntimeError(f"pip {' '.join(args[:2])} failed: {done.stderr[-2000:]}")


def sdist_root() -> Path:
    """langgraph-sdk's sdist, of the installed version, fetched from PyPI once (checked by
    hash) and unpacked in the cache."""
    pinned = PINNED.read_text().split()[0]
    installed = f"langgraph-sdk=={version('langgraph-sdk')}"
    if pinned != installed:
        raise RuntimeError(f"{PINNED.name} pins {pinned} but {installed} is installed: update its hash")
    name = pinned.replace("==", "-").replace("-", "_", 1)
    unpacked = CACHE / name
    if not (unpacked / "tests" / "integration").is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        _pip("download", "--no-deps", "--no-binary", ":all:", "--require-hashes", "-r", str(PINNED), "-d", str(CACHE))
        with tarfile.open(CACHE / f"{name}.tar.gz") as sdist:
            sdist.extractall(CACHE, filter="data")
    return unpacked


def sdist_tests() -> Path:
    """The suite: the sdist's tests/integration directory."""
    return sdist_root() / "tests" / "integration"


def graph_packages() -> Path:
    """The directory holding what the suite's graphs import (GRAPH_REQUIREMENTS), installed
    once per version of that file: into a temporary directory, then renamed, so a cut install
    is never taken for a whole one."""
    digest = hashlib.sha256(GRAPH_REQUIREMENTS.read_bytes()).hexdigest()[:12]
    target = CACHE / f"graph-packages-{digest}"
    if not target.is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix="graph-packages-", dir=CACHE))
        try:
            _pip(
                "install",
                "--no-deps",
                "--require-hashes",
                "--only-binary",
                ":all:",
                "--target",
                str(partial),
                "-r",
                str(GRAPH_REQUIREMENTS),
            )
            partial.rename(target)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return target


def namespace_prefix() -> list[str]:
    """A command's prefix that runs it in a new network namespace (and a user namespace when
    not root, which lets it bring its loopback up)."""
    if shutil.which("unshare") is None:
        raise RuntimeError("`unshare` (util-linux) is needed to give the suite's server port 2024 of its own")
    return ["unshare", "--net", *(["--map-root-user"] if os.geteuid() != 0 else [])]


def loopback_up() -> None:
    """Bring `lo` up in this network namespace (a new one has it down): SIOCSIFFLAGS with
    IFF_UP, as `ip link set lo up` does."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH22x", b"lo", 0)  # struct ifreq: the name, then the flags
        flags = struct.unpack("16sH22x", fcntl.ioctl(s, siocgifflags, request))[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sH22x", b"lo", flags | iff_up))


@dataclass(frozen=True)
class SuiteRun:
    """One run of the suite: each test's outcome (`file.py::test`), the wall time."""

    server: str
    outcomes: dict[str, str]
    seconds: float

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.outcomes.values() if o == outcome)

    @property
    def passed(self) -> list[str]:
        return sorted(t for t, o in self.outcomes.items() if o == "passed")

    def summary(self) -> str:
        counts = ", ".join(f"{self.count(o)} {o}" for o in OUTCOMES if self.count(o))
        return f"{counts} of {len(self.outcomes)}"


def junit_outcomes(xml_file: Path) -> dict[str, str]:
    """`test_file.py::test_name` -> passed / failed / error / skipped, from pytest's JUnit XML."""
    outcomes: dict[str, str] = {}
    for case in ET.parse(xml_file).getroot().iter("testcase"):
        module = case.get("classname", "").rpartition(".")[2]
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                break
        outcomes[f"{module}.py::{case.get('name')}"] = outcome
    return outcomes


def run_suite(server: str, work: Path, tests: Sequence[str] = (), timeout: float = 60) -> SuiteRun:
    """Run the suite (or `tests`, paths under its tests/integration) against `server` (one of
    SERVERS) in a private network namespace; `work` keeps the server's data and log."""
    if server not in SERVERS:
        raise ValueError(f"server must be one of {SERVERS}")
    if server == "langgraph-dev" and not (PEER_VENV / "bin" / "langgraph").exists():
        raise RuntimeError(f"{PEER_VENV} is missing: `make bench-peers` (or `make bench`) builds it")
    root, packages = sdist_root(), graph_packages()
    project = work / "integration"
    shutil.copytree(root / "integration", project, dirs_exist_ok=True)
    junit = work / "junit.xml"
    started = time.monotonic()
    done = subprocess.run(
        [
            *namespace_prefix(),
            sys.executable,
            "-m",
            "tests.support.sdk_suite",
            "--inside",
            server,
            "--project",
            str(project),
            "--packages",
            str(packages),
            "--work",
            str(work),
            "--timeout",
            str(timeout),
            *(f"--test={t}" for t in tests),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}"},
        capture_output=True,
        text=True,
        timeout=timeout * 60 + 300,
    )
    if not junit.exists():
        raise RuntimeError(
            f"the suite did not run against {server} (exit {done.returncode}): {done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    return SuiteRun(server, junit_outcomes(junit), time.monotonic() - started)


# --- inside the namespace ---------------------------------------------------------------------


def server_command(server: str, project: Path, packages: Path, work: Path) -> tuple[list[str], dict[str, str]]:
    """The server's command line and environment: it listens on PORT, with the suite's graphs
    and their packages."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_", "LANGGRAPH_", "LANGSMITH_"))}
    if server == "sophos":
        env = {
            **clean,
            **app_env(
                work,
                MODEL_BACKEND="demo",
                TOOLS_BACKEND="none",
                TOOL_APPROVAL="off",
                LANGGRAPH_API_PORT=str(PORT),
                PORT="8000",
                HOST="127.0.0.1",
                ALLOWED_HOSTS="",
            ),
        }
        env["PYTHONPATH"] = f"{ROOT}:{ROOT / 'src'}:{packages}"
        return [SOPHOS, "serve", "--langgraph-json", str(project / "langgraph.json")], env
    env = {
        **clean,
        "PYTHONPATH": str(packages),
        "LANGSMITH_TRACING": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
    }
    return [
        str(PEER_VENV / "bin" / "langgraph"),
        "dev",
        "--no-browser",
        "--no-reload",
        "--host",
        "127.0.0.1",
        "--port",
        str(PORT),
        "--config",
        str(project / "langgraph.json"),
        "--server-log-level",
        "WARNING",
    ], env


def wait_ok(proc: subprocess.Popen[bytes], log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited ({proc.returncode}): {log.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{PORT}/ok", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the server did not answer /ok in {timeout:.0f} s: {log.read_text(errors='replace')[-3000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def inside(args: argparse.Namespace) -> int:
    """In the namespace: loopback up, the server on PORT, the suite's pytest against it."""
    loopback_up()
    work = Path(args.work)
    command, env = server_command(args.inside, Path(args.project), Path(args.packages), work)
    log = work / "server.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(command, cwd=args.project, env=env, stdout=out, stderr=out, start_new_session=True)
    try:
        wait_ok(proc, log)
        suite = sdist_tests()
        client_env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
        client_env["LANGGRAPH_INTEGRATION_URL"] = f"http://localhost:{PORT}"
        targets = [str(suite / t) for t in args.test] or [str(suite)]
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-m",
                "integration",
                "-o",
                "addopts=",
                "-p",
                "no:cacheprovider",
                "-p",
                "no:randomly",
                "-q",
                "--timeout",
                str(args.timeout),
                "--junitxml",
                str(work / "junit.xml"),
                *targets,
            ],
            cwd=suite.parent.parent,
            env=client_env,
            timeout=args.timeout * 60 + 120,
        )
        return done.returncode
    finally:
        stop(proc)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("server", nargs="?", choices=SERVERS)
    parser.add_argument("tests", nargs="*", help="paths under the suite's tests/integration (default: all)")
    parser.add_argument("--inside", choices=SERVERS, help=argparse.SUPPRESS)
    for hidden in ("--project", "--packages", "--work"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    parser.add_argument("--test", action="append", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=60, help="seconds one test may take")
    args = parser.parse_args(argv)
    if args.inside:
        return inside(args)
    if args.server is None:
        parser.error("name a server: sophos or langgraph-dev")
    with tempfile.TemporaryDirectory(prefix="sophos-sdk-suite-") as tmp:
        run = run_suite(args.server, Path(tmp), args.tests, args.timeout)
    for test, outcome in sorted(run.outcomes.items()):
        print(f"{outcome.upper():8} {test}")
    print(f"{run.server}: {run.summary()} in {run.seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
