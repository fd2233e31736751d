"""Start-up: how long a command takes from exec to its answer, a baseline source tree (a git
ref, checked out as a temporary worktree) against this one, alternately: `sophos --help`
(no container), `sophos conversations` (a read command: the container, storage, no
LangGraph) and `sophos serve` until /api/healthz answers (the demo model, no tools).

Each figure is the median of `--startup-reps` runs, as wall time and as CPU time (user +
system of the process): on a shared machine the wall time moves with the load, the CPU time
much less, so the CPU column is the one to compare across runs.
Usage: python -m bench --only startup [--baseline-ref REF (default main; none: this tree alone)]
[--startup-reps 15]"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from bench.serving import ROOT, Tree, check_sources, free_port, serve_python, worktree_or_none
from bench.table import Row, print_table

HELP = ["--help"]
READ = ["conversations"]
DEFAULT_REF = "main"  # what a change is measured against, unless --baseline-ref or BENCH_BASELINE_REF
WORSE_BY = 0.10  # the target: no start-up more than 10% slower (CPU) than the baseline's
TICKS = os.sysconf("SC_CLK_TCK")


def command_env(tree: Tree, data: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            # ahead of site-packages, so ahead of the editable install's .pth (this tree's src/)
            "PYTHONPATH": str(tree.root / "src"),
            "CONFIG_DIR": str(tree.root / "config"),
            "DATABASE_PATH": str(data / "db" / "sophos.db"),
            "MODEL_BACKEND": "demo",
            "TOOLS_BACKEND": "none",
            "LOG_LEVEL": "WARNING",
            "HOST": "127.0.0.1",
            "API_TOKEN": "",
            "LANGGRAPH_API_PORT": "0",
        }
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


PYTHON = ""  # the runtime venv's python (serve_python), chosen once per section


def sophos(*args: str) -> list[str]:
    return [PYTHON, "-c", "from entrypoints.cli import main; main()", *args]


def run_once(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU milliseconds of one command that must succeed."""
    began = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - began) * 1000
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd[3:])} failed ({proc.returncode}): {proc.stderr.read().decode() if proc.stderr else ''}"
        )
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def cpu_ms(pid: int) -> float:
    """User + system CPU of a running process so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / TICKS


async def serve_once(tree: Tree, data: Path) -> tuple[float, float]:
    """Wall and CPU milliseconds from exec to the first 200 of /api/healthz."""
    env = command_env(tree, data)
    port = free_port()
    env["PORT"] = str(port)
    began = time.perf_counter()
    proc = subprocess.Popen(sophos("serve"), env=env, cwd=tree.root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        async with httpx.AsyncClient(timeout=1) as client:
            while time.perf_counter() - began < 60:
                if proc.poll() is not None:
                    raise RuntimeError(f"{tree.label}: serve exited: {proc.stderr.read().decode() if proc.stderr else ''}")
                try:
                    if (await client.get(f"http://127.0.0.1:{port}/api/healthz")).status_code == 200:
                        return (time.perf_counter() - began) * 1000, cpu_ms(proc.pid)
                except httpx.HTTPError:
                    await asyncio.sleep(0.01)  # polling a port that is not open yet
        raise RuntimeError(f"{tree.label}: serve did not answer in 60 s")
    finally:
        proc.terminate()
        proc.wait(30)


Samples = dict[str, list[tuple[float, float]]]


async def measure(trees: list[Tree], reps: int, data: Path) -> dict[str, Samples]:
    """Every figure of every tree, `reps` times, the trees alternating within each rep."""
    out: dict[str, Samples] = {t.label: {"help": [], "read": [], "serve": []} for t in trees}
    for tree in trees:
        env = command_env(tree, data / tree.label)
        check_sources(tree, env)
        # as an installed package has it: PYTHONDONTWRITEBYTECODE (set in CI images) would
        # have every run compile the tree's sources again, and a fresh worktree has no .pyc
        subprocess.run([PYTHON, "-m", "compileall", "-q", str(tree.root / "src")], env=env, check=True, stdout=subprocess.DEVNULL)
        run_once(sophos(*READ), env, tree.root)  # creates the database: the reads below find it
    for rep in range(reps):
        for tree in trees:
            env, got = command_env(tree, data / tree.label), out[tree.label]
            got["help"].append(run_once(sophos(*HELP), env, tree.root))
            got["read"].append(run_once(sophos(*READ), env, tree.root))
            got["serve"].append(await serve_once(tree, data / tree.label))
        print(f"  rep {rep + 1} of {reps} done", flush=True)
    return out


FIGURES = {
    "help": "`sophos --help`",
    "read": "`sophos conversations` (empty database)",
    "serve": "`sophos serve` until /api/healthz answers",
}


def describe(samples: list[tuple[float, float]]) -> tuple[float, float, str]:
    wall = statistics.median(s[0] for s in samples)
    cpu = statistics.median(s[1] for s in samples)
    return wall, cpu, f"{wall:.0f} ms wall, {cpu:.0f} ms CPU"


def table(base: Samples | None, mine: Samples) -> list[Row]:
    rows: list[Row] = []
    for key, label in FIGURES.items():
        _, cpu, text = describe(mine[key])
        if base is None:
            rows.append((label, "-", text, "-", True))
            continue
        _, base_cpu, base_text = describe(base[key])
        ratio = cpu / base_cpu
        rows.append((label, base_text, f"{text} = {ratio:.2f}x CPU", f"<= {1 + WORSE_BY:.2f}x", ratio <= 1 + WORSE_BY))
    return rows


async def section(args: argparse.Namespace) -> None:
    """Measure and print the start-up table (`--only startup`)."""
    ref = args.baseline_ref or os.environ.get("BENCH_BASELINE_REF") or DEFAULT_REF
    ref = None if ref.lower() == "none" else ref
    global PYTHON
    PYTHON = serve_python()
    data = Path(tempfile.mkdtemp(prefix="sophos-bench-startup-"))
    current = Tree("current", ROOT)
    try:
        with worktree_or_none(ref) as base:
            got = await measure([t for t in (base, current) if t is not None], args.startup_reps, data)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    baseline = got[f"baseline {ref}"] if ref else None
    print_table(
        (f"median of {args.startup_reps}", f"baseline {ref}" if ref else "-", "current", "target"),
        table(baseline, got[current.label]),
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--startup-reps", type=int, default=15, help="runs of each start-up figure per tree")
