"""The processes the concurrency benchmark drives: a fake Ollama, `sophos serve` from a
given source tree (this one, or a git ref checked out as a temporary worktree), and CPU meters
reading /proc."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import httpx

ROOT = Path(__file__).resolve().parents[1]
ANSWER = "Short answer, a few tokens."


@dataclass(frozen=True)
class Tree:
    """A source tree to serve: its src/ goes first on PYTHONPATH, its config/ is CONFIG_DIR."""

    label: str
    root: Path


class FakeModel(NamedTuple):
    url: str
    pid: int


@dataclass(frozen=True)
class Placement:
    """Which CPUs the server under measurement runs on, and which the load (this process, its
    client and the fake model): apart, so the load generator's CPU never competes with the
    server's. `server` None: nobody is pinned, every process goes where the kernel puts it."""

    server: frozenset[int] | None = None
    load: frozenset[int] | None = None

    def command(self, cmd: list[str]) -> list[str]:
        """`cmd` under `taskset` (util-linux) on the server's CPUs."""
        if self.server is None:
            return cmd
        return ["taskset", "--cpu-list", ",".join(map(str, sorted(self.server))), *cmd]


UNPINNED = Placement()


def split_cpus() -> Placement:
    """The last CPU this process may use for the server, the others for the load; no split
    on one CPU, or without `taskset`."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2 or shutil.which("taskset") is None:
        return UNPINNED
    return Placement(frozenset(cpus[-1:]), frozenset(cpus[:-1]))


@contextmanager
def placed(cpus: frozenset[int] | None) -> Iterator[None]:
    """This thread (and the processes and threads it starts) on `cpus`, then back."""
    if cpus is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), from /proc/<pid>/stat."""
    # the command name may hold spaces and parentheses: split after the last ")"
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU time the whole machine spent busy (all cores), from /proc/stat."""
    user, nice, system, idle, iowait, *rest = (int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:])
    return (user + nice + system + sum(rest[:3])) / os.sysconf("SC_CLK_TCK")  # + irq, softirq, steal


class CpuMeter:
    """CPU used between start and stop by the server, and by everything else on the machine
    but the harness (this process and the fake model): the background load that makes noise."""

    def __init__(self, server: int, harness: tuple[int, ...]) -> None:
        self.server, self.harness = server, harness
        self.t0, self.at_start = 0.0, (0.0, 0.0, 0.0)

    def _read(self) -> tuple[float, float, float]:
        return cpu_seconds(self.server), sum(cpu_seconds(p) for p in self.harness), machine_busy_seconds()

    def start(self) -> None:
        self.t0, self.at_start = time.perf_counter(), self._read()

    def stop(self) -> tuple[float, float, float, float]:
        """(wall seconds, server CPU seconds, harness CPU seconds, background cores on average)."""
        wall = time.perf_counter() - self.t0
        server, harness, busy = (b - a for a, b in zip(self.at_start, self._read(), strict=True))
        return wall, server, harness, max(busy - server - harness, 0.0) / wall


@contextmanager
def fake_ollama_process() -> Iterator[FakeModel]:
    """A fake Ollama in a process of its own (not sharing the client's GIL), TCP_NODELAY on."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "tests.support.fake_ollama", "--nodelay", "--text", ANSWER]
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError(f"fake Ollama did not start (exit {proc.poll()})")
        yield FakeModel(url, proc.pid)
    finally:
        proc.kill()
        proc.wait()


def git(*args: str) -> None:
    subprocess.run(["git", "-C", str(ROOT), *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@contextmanager
def worktree_or_none(ref: str | None) -> Iterator[Tree | None]:
    """A detached worktree of `ref`, removed afterwards; None when there is no ref."""
    if ref is None:
        yield None
        return
    with worktree(ref) as tree:
        yield tree


@contextmanager
def worktree(ref: str) -> Iterator[Tree]:
    tmp = Path(tempfile.mkdtemp(prefix="sophos-bench-baseline-"))
    path = tmp / "tree"
    git("worktree", "add", "--detach", str(path), ref)
    try:
        yield Tree(f"baseline {ref}", path)
    finally:
        git("worktree", "remove", "--force", str(path))
        shutil.rmtree(tmp, ignore_errors=True)


def server_env(tree: Tree, data: Path, ollama_url: str, port: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            # ahead of site-packages, so ahead of the editable install's .pth (this tree's src/)
            "PYTHONPATH": str(tree.root / "src"),
            "CONFIG_DIR": str(tree.root / "config"),
            "DATABASE_PATH": str(data / "db" / "sophos.db"),
            "MEMORY_FILE_PATH": str(data / "memory" / "memory.jsonl"),
            "MODEL_BACKEND": "ollama",
            "TOOLS_BACKEND": "none",
            "OLLAMA_HOST": ollama_url,
            "OLLAMA_MODEL": "qwen3",
            "LOG_LEVEL": "WARNING",
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "API_TOKEN": "",
            "AUTO_RESUME": "false",
            "AUTO_TITLE": "false",  # a title request per new conversation would be load the bench does not measure
            "LANGGRAPH_API_PORT": "0",  # a bench that wants it sets a free port (several servers, one 2024)
        }
    )
    return env


def check_sources(tree: Tree, env: dict[str, str]) -> None:
    """Fail unless the server's python imports `entrypoints` from the tree's own src/."""
    code = "import entrypoints; print(entrypoints.__file__)"
    out = subprocess.run(
        [serve_python(), "-c", code], env=env, cwd=tree.root, capture_output=True, text=True, check=True
    ).stdout.strip()
    if not Path(out).resolve().is_relative_to((tree.root / "src").resolve()):
        raise RuntimeError(f"{tree.label}: entrypoints imported from {out}, not from {tree.root / 'src'}")


# the venv `make bench` builds from requirements.lock alone: a served process as `make run` has it
SERVE_PYTHON = ROOT / ".bench-runtime" / "bin" / "python"


def serve_python() -> str:
    """The runtime-only venv's python when `make bench` built it, else this one (with a note:
    the dev tools' imports then count in RSS and start-up)."""
    if SERVE_PYTHON.exists():
        return str(SERVE_PYTHON)
    print(f"note: {SERVE_PYTHON} is missing (`make bench` builds it); serving with the dev venv", flush=True)
    return sys.executable


class Server:
    """`sophos serve` from a tree's sources, with the runtime venv's python."""

    def __init__(self, tree: Tree, data: Path, ollama_url: str, placement: Placement = UNPINNED) -> None:
        self.port = free_port()
        self.tree = tree
        self.placement = placement
        self.env = server_env(tree, data, ollama_url, self.port)
        self.log = data / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, timeout: float = 60.0) -> int:
        check_sources(self.tree, self.env)
        cmd = self.placement.command([serve_python(), "-c", "from entrypoints.cli import main; main()", "serve"])
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(cmd, env=self.env, cwd=self.tree.root, stdout=out, stderr=out)
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(timeout=1) as client:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.tree.label}: server exited: {self.log.read_text()}")
                try:
                    if (await client.get(f"{self.url}/api/healthz")).status_code == 200:
                        return self.proc.pid
                except httpx.HTTPError:
                    await asyncio.sleep(0.05)
        raise RuntimeError(f"{self.tree.label}: server did not start in {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
