"""A hosted graph side by side (issue 44), in `make bench-peers`: bench/peer/trivial (one node
adding one to a counter) served from the same langgraph.json by

- the LangGraph Agent Server's local form, `langgraph dev` (.bench-venv, in-memory runtime);
- `sophos serve --langgraph-json` from this tree (SQLite, its hosted-graph run kernel);

each driven by the official SDK (`runs.wait`, 64 threads at once, a few runs each), and by
- bare LangGraph: the same graph's `ainvoke` in this process on the saver Sophos gives a hosted
  graph on SQLite (adapters.sqlite.saver.ThreadedSqliteSaver, durability "sync" as Sophos runs),
  64 threads at once; its CPU is this process's.

Figures: runs/s at 64 threads (target: Sophos >= 3x langgraph dev), the server's CPU per run
(Sophos <= 1.2x bare LangGraph's), the p95 of a run. The machine's load average is printed with
them: on a shared machine every figure is noisy."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.concurrency import describe
from bench.peers import PEER_VENV, THIS_TREE, PeerServer, print_rows, ratio, tree_pids
from bench.serving import UNPINNED, CpuMeter, Placement, Server, cpu_seconds, fake_ollama_process, placed, split_cpus

TRIVIAL = Path(__file__).parent / "peer" / "trivial"
THREADS = 64
RUNS = 5  # per thread
WARMUP = 16


@dataclass
class Hosted:
    runs_per_s: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)  # per run: the server's (bare: this process's)
    p95_ms: list[float] = field(default_factory=list)


async def sdk_load(url: str, pid: int | None, out: Hosted) -> None:
    """64 threads, RUNS `runs.wait` each, through the SDK; the server's CPU from /proc."""
    from langgraph_sdk import get_client

    client = get_client(url=url, api_key=None, timeout=httpx.Timeout(120))

    async def thread(runs: int, latencies: list[float]) -> None:
        tid = (await client.threads.create())["thread_id"]
        for _ in range(runs):
            t = time.perf_counter()
            done = await client.runs.wait(tid, "trivial", input={"n": 0})
            if not isinstance(done, dict) or "n" not in done:
                raise RuntimeError(f"a run of the trivial graph answered {done!r}")
            latencies.append((time.perf_counter() - t) * 1000)

    await asyncio.gather(*(thread(1, []) for _ in range(WARMUP)))
    pids = tree_pids(pid) if pid else []
    cpu0 = sum(cpu_seconds(p) for p in pids)
    meter = CpuMeter(pid or os.getpid(), (os.getpid(),))
    latencies: list[float] = []
    meter.start()
    await asyncio.gather(*(thread(RUNS, latencies) for _ in range(THREADS)))
    wall = meter.stop()[0]
    cpu = sum(cpu_seconds(p) for p in pids if Path(f"/proc/{p}").exists()) - cpu0
    out.runs_per_s.append(len(latencies) / wall)
    out.cpu_ms.append(cpu * 1000 / len(latencies))
    out.p95_ms.append(statistics.quantiles(latencies, n=20, method="inclusive")[18])


async def measure_sophos(model_url: str, out: Hosted, placement: Placement = UNPINNED) -> None:
    data = Path(tempfile.mkdtemp(prefix="sophos-bench-hosted-"))
    server = Server(THIS_TREE, data, model_url, placement)
    lg_port = _free_port()
    server.env.update({"LANGGRAPH_API_PORT": str(lg_port), "LANGGRAPH_JSON": str(TRIVIAL / "langgraph.json")})
    try:
        pid = await server.start(timeout=120)
        await _wait_ok(f"http://127.0.0.1:{lg_port}")
        await sdk_load(f"http://127.0.0.1:{lg_port}", pid, out)
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)


async def measure_peer(model_url: str, out: Hosted, placement: Placement = UNPINNED) -> None:
    data = Path(tempfile.mkdtemp(prefix="sophos-bench-hosted-peer-"))
    server = PeerServer(data, model_url, placement, source=TRIVIAL)
    try:
        pid = await server.start()
        await sdk_load(server.url, pid, out)
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)


async def measure_bare(out: Hosted) -> None:
    """The graph's `ainvoke` on Sophos's SQLite saver, 64 threads at once, in this process."""
    import importlib.util

    from adapters.sqlite.saver import ThreadedSqliteSaver

    spec = importlib.util.spec_from_file_location("bench_trivial_graph", TRIVIAL / "graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    data = Path(tempfile.mkdtemp(prefix="sophos-bench-hosted-bare-"))
    saver = ThreadedSqliteSaver.open(str(data / "bare.db"))
    graph = module.builder.compile(checkpointer=saver)

    async def thread(runs: int, latencies: list[float]) -> None:
        config = {"configurable": {"thread_id": str(uuid.uuid4())}}
        for _ in range(runs):
            t = time.perf_counter()
            await graph.ainvoke({"n": 0}, config, durability="sync")
            latencies.append((time.perf_counter() - t) * 1000)

    try:
        await asyncio.gather(*(thread(1, []) for _ in range(WARMUP)))
        latencies: list[float] = []
        cpu0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(thread(RUNS, latencies) for _ in range(THREADS)))
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        out.runs_per_s.append(len(latencies) / wall)
        out.cpu_ms.append(cpu * 1000 / len(latencies))
        out.p95_ms.append(statistics.quantiles(latencies, n=20, method="inclusive")[18])
    finally:
        saver.close()
        shutil.rmtree(data, ignore_errors=True)


async def section(args: argparse.Namespace) -> None:
    """Measure and print the hosted graph's table (`make bench-peers`, or `--only peers-hosted`)."""
    where = UNPINNED if args.peers_unpinned else split_cpus()
    print(f"hosted graph, before: {load_line()}", flush=True)
    with placed(where.load), fake_ollama_process() as model:
        rows = await measure(model.url, args.reps, where)
    print_rows(rows)
    print(f"hosted graph, after: {load_line()}")


async def measure(model_url: str, reps: int, where: Placement) -> list[tuple[str, ...]]:
    """Measure the three, `reps` times alternating; the table's rows."""
    bare, peer, ours = Hosted(), Hosted(), Hosted()
    for rep in range(1, reps + 1):
        with placed(where.server):
            await measure_bare(bare)
        if (PEER_VENV / "bin" / "langgraph").exists():
            await measure_peer(model_url, peer, where)
        await measure_sophos(model_url, ours, where)
        print(
            f"  hosted rep {rep}: bare {bare.runs_per_s[-1]:.0f} runs/s {bare.cpu_ms[-1]:.2f} ms CPU; "
            f"peer {f'{peer.runs_per_s[-1]:.0f} runs/s {peer.cpu_ms[-1]:.2f} ms CPU' if peer.runs_per_s else '-'}; "
            f"sophos {ours.runs_per_s[-1]:.0f} runs/s {ours.cpu_ms[-1]:.2f} ms CPU",
            flush=True,
        )
    return table(bare, peer, ours)


def table(bare: Hosted, peer: Hosted, ours: Hosted) -> list[tuple[str, ...]]:
    head = (
        "hosted trivial graph, 64 threads",
        "bare LangGraph ainvoke",
        "langgraph dev",
        "Sophos",
        "Sophos / peer",
        "Sophos / bare",
        "target",
    )
    specs = [
        ("runs/s", "runs_per_s", "runs/s", ">= 3x peer"),
        ("CPU per run (server; bare: its process)", "cpu_ms", "ms", "<= 1.2x bare"),
        ("run p95 (SDK runs.wait)", "p95_ms", "ms", "-"),
    ]
    rows = [head]
    for label, attr, unit, target in specs:
        b, p, o = getattr(bare, attr), getattr(peer, attr), getattr(ours, attr)
        rows.append((label, _cell(b, unit), _cell(p, unit), _cell(o, unit), ratio(o, p), ratio(o, b), target))
    return rows


def _cell(values: list[float], unit: str) -> str:
    return describe(values, unit) if values else "-"


def _free_port() -> int:
    from bench.serving import free_port

    return free_port()


async def _wait_ok(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(timeout=1) as client:
        while time.monotonic() < deadline:
            try:
                if (await client.get(f"{url}/ok")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url}/ok did not answer in {timeout:.0f} s")


def load_line() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores (a shared machine: other work ran beside)"
