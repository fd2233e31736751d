"""Side by side with the peers, on one fake Ollama process answering at once (TCP_NODELAY), so
every figure is framework overhead:

- the LangGraph Agent Server in its local form: `langgraph dev` (in-memory runtime,
  `--n-jobs-per-worker 64`), from a bench-only venv (.bench-venv, `make bench` creates it from
  bench/peer/requirements.txt; it is run, never imported by Sophos), serving bench/peer/graph.py
  (Sophos's graph shape), driven by the official `langgraph-sdk` (`runs.stream`, messages);
- Sophos: `sophos serve` from this tree, a turn being one `POST /api/chat` with
  `Accept: text/event-stream` read up to `end`;
- Sophos through the same SDK as the peer: the same server's LangGraph API
  (`LANGGRAPH_API_PORT`), the same `peer_turn`, so the two servers are compared client for client;
- bare LangGraph: the same graph shape in this process, on AsyncSqliteSaver (aiosqlite): one
  conversation, and 64 in parallel for the floor (no HTTP at all; its CPU is this process's, the
  fake model being another process), what a server on LangGraph cannot go below.

Servers run one at a time, three repetitions each, alternating; a figure is the median of the
repetitions with their range. Each system under measurement runs on one CPU (a server pinned
with `taskset`; bare LangGraph is this process, pinned while it measures) and the load (the
client, the fake model) on the others, so that neither takes CPU from the other; with
`--peers-unpinned` every process goes where the kernel puts it. With `--peers-baseline-ref REF`
(or BENCH_PEERS_BASELINE_REF), Sophos from a worktree of REF runs in each repetition too, beside
this tree: a same-run A/B of every figure.
Usage: python -m bench --only peers [--reps 3] [--peers-unpinned] [--peers-baseline-ref REF]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from langchain_core.messages import AIMessage, SystemMessage
from langchain_ollama import ChatOllama
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph

from bench.concurrency import describe
from bench.serving import (
    ROOT,
    UNPINNED,
    CpuMeter,
    Placement,
    Server,
    Tree,
    cpu_seconds,
    fake_ollama_process,
    free_port,
    placed,
    split_cpus,
    worktree_or_none,
)

PEER_VENV = ROOT / ".bench-venv"
THIS_TREE = Tree("current", ROOT)
PEER_DIR = ROOT / "bench" / "peer"
Turn = Callable[[Any, str], Awaitable[tuple[float, float]]]  # (conversation, message) -> (turn ms, TTFT ms)


@dataclass
class Figures:
    turn: list[float] = field(default_factory=list)  # one conversation, p50 per repetition
    ttft: list[float] = field(default_factory=list)
    turns_per_s: list[float] = field(default_factory=list)
    p95: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # server CPU ms per turn at 64 conversations
    rss: list[float] = field(default_factory=list)  # MB after the concurrency test


@dataclass(frozen=True)
class Load:
    single_turns: int = 30
    conversations: int = 64
    turns: int = 5
    warmup: int = 16


def tree_pids(pid: int) -> list[int]:
    """A process and its descendants (the peer's CLI may serve from a child)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
    return out


def rss_mb(pid: int) -> float:
    total = 0.0
    for p in tree_pids(pid):
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) / 1024
    return total


class PeerServer:
    """`langgraph dev` on a copy of bench/peer in a temporary directory (it writes state there)."""

    def __init__(self, data: Path, ollama_url: str, placement: Placement = UNPINNED, source: Path = PEER_DIR) -> None:
        self.dir, self.port = data / "peer", free_port()
        self.placement = placement
        shutil.copytree(source, self.dir, ignore=shutil.ignore_patterns("requirements.txt", "__pycache__"))
        self.env = {
            **os.environ,
            "OLLAMA_HOST": ollama_url,
            "OLLAMA_MODEL": "qwen3",
            "PEER_SYSTEM_PROMPT": str(ROOT / "config" / "system.md"),
            "LANGSMITH_TRACING": "false",
            "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        }
        self.env.pop("PYTHONPATH", None)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, timeout: float = 120.0) -> int:
        cmd = self.placement.command(
            [
                str(PEER_VENV / "bin" / "langgraph"),
                "dev",
                "--no-browser",
                "--no-reload",
                "--port",
                str(self.port),
                "--n-jobs-per-worker",
                "64",
                "--server-log-level",
                "WARNING",
            ]
        )
        log = (self.dir / "server.log").open("ab")
        self.proc = subprocess.Popen(cmd, cwd=self.dir, env=self.env, stdout=log, stderr=log)
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(timeout=1) as client:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"langgraph dev exited: {(self.dir / 'server.log').read_text()[-2000:]}")
                try:
                    if (await client.get(f"{self.url}/ok")).status_code == 200:
                        return self.proc.pid
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.2)
        raise RuntimeError("langgraph dev did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# --- one turn, for each system ---------------------------------------------------------


async def sophos_turn(client: httpx.AsyncClient, conv: dict[str, str], message: str) -> tuple[float, float]:
    t = time.perf_counter()
    ttft = 0.0
    body = {"message": message, **({"conversation": conv["id"]} if "id" in conv else {})}
    async with client.stream("POST", "/api/chat", json=body, headers={"Accept": "text/event-stream"}) as r:
        if r.status_code != 200:
            raise RuntimeError(f"POST /api/chat: {r.status_code} {(await r.aread())[:200]!r}")
        conv["id"] = r.headers["x-conversation-id"]
        event = ""
        async for line in r.aiter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
                if event == "token" and not ttft:
                    ttft = (time.perf_counter() - t) * 1000
            elif line == "" and event in ("end", "chat-error"):
                break
    if event != "end":
        raise RuntimeError(f"turn ended with {event or 'nothing'}")
    return (time.perf_counter() - t) * 1000, ttft


async def peer_turn(client: Any, conv: dict[str, str], message: str) -> tuple[float, float]:
    t = time.perf_counter()
    ttft = 0.0
    if "id" not in conv:
        conv["id"] = (await client.threads.create())["thread_id"]
    stream = client.runs.stream(
        conv["id"], "agent", input={"messages": [{"role": "user", "content": message}]}, stream_mode="messages-tuple"
    )
    async for part in stream:
        if part.event == "error":
            raise RuntimeError(f"peer run failed: {part.data}")
        if part.event == "messages" and not ttft and part.data and part.data[0].get("content"):
            ttft = (time.perf_counter() - t) * 1000
    return (time.perf_counter() - t) * 1000, ttft


def bare_graph(db: str, ollama_url: str) -> Any:
    """Sophos's graph shape on plain LangGraph, streaming the model into the messages stream."""
    system = (ROOT / "config" / "system.md").read_text()
    model = ChatOllama(model="qwen3", base_url=ollama_url, reasoning=False)

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke([SystemMessage(system), *state["messages"]])]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", lambda state: {"messages": []})
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder, AsyncSqliteSaver.from_conn_string(db)


async def bare_turn(graph: Any, conv: dict[str, str], message: str) -> tuple[float, float]:
    t = time.perf_counter()
    ttft = 0.0
    config = {"configurable": {"thread_id": conv.setdefault("id", os.urandom(8).hex())}}
    async for chunk, _ in graph.astream({"messages": [("user", message)]}, config, stream_mode="messages", durability="sync"):
        if not ttft and getattr(chunk, "content", None):
            ttft = (time.perf_counter() - t) * 1000
    return (time.perf_counter() - t) * 1000, ttft


# --- the load ------------------------------------------------------------------------------


async def single(turn: Turn, client: Any, n: int, out: Figures) -> None:
    conv: dict[str, str] = {}
    results = [await turn(client, conv, f"turn {i + 1}: say something short") for i in range(n)]
    out.turn.append(statistics.median(r[0] for r in results))
    out.ttft.append(statistics.median(r[1] for r in results))


async def parallel(turn: Turn, client: Any, pid: int, load: Load, out: Figures) -> None:
    async def conversation(turns: int, latencies: list[float]) -> None:
        conv: dict[str, str] = {}
        for i in range(turns):
            latencies.append((await turn(client, conv, f"turn {i + 1}: say something short"))[0])

    await asyncio.gather(*(conversation(1, []) for _ in range(load.warmup)))
    pids = tree_pids(pid)
    meter = CpuMeter(pid, (os.getpid(),))
    cpu0 = sum(cpu_seconds(p) for p in pids)
    latencies: list[float] = []
    meter.start()
    await asyncio.gather(*(conversation(load.turns, latencies) for _ in range(load.conversations)))
    wall = meter.stop()[0]
    cpu = sum(cpu_seconds(p) for p in pids if Path(f"/proc/{p}").exists()) - cpu0
    out.turns_per_s.append(len(latencies) / wall)
    out.p95.append(statistics.quantiles(latencies, n=20, method="inclusive")[18])
    out.cpu.append(cpu * 1000 / len(latencies))
    out.rss.append(rss_mb(pid))


async def measure_sophos(
    ollama_url: str, load: Load, out: Figures, tree: Tree = THIS_TREE, placement: Placement = UNPINNED
) -> None:
    data = Path(tempfile.mkdtemp(prefix="sophos-bench-peers-"))
    server = Server(tree, data, ollama_url, placement)
    try:
        pid = await server.start()
        limits = httpx.Limits(max_connections=load.conversations * 2 + 8, max_keepalive_connections=load.conversations * 2 + 8)
        async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=120) as client:
            await single(sophos_turn, client, load.single_turns, out)
            await parallel(sophos_turn, client, pid, load, out)
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)


async def measure_sophos_sdk(
    ollama_url: str, load: Load, out: Figures, tree: Tree = THIS_TREE, placement: Placement = UNPINNED
) -> None:
    """Sophos's LangGraph API driven by the official SDK, exactly as the peer is."""
    from langgraph_sdk import get_client

    data = Path(tempfile.mkdtemp(prefix="sophos-bench-sdk-"))
    server = Server(tree, data, ollama_url, placement)
    lg_port = free_port()
    server.env["LANGGRAPH_API_PORT"] = str(lg_port)
    try:
        pid = await server.start()
        client = get_client(url=f"http://127.0.0.1:{lg_port}", api_key=None, timeout=httpx.Timeout(120))
        await single(peer_turn, client, load.single_turns, out)
        await parallel(peer_turn, client, pid, load, out)
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)


async def measure_peer(ollama_url: str, load: Load, out: Figures, placement: Placement = UNPINNED) -> None:
    from langgraph_sdk import get_client

    data = Path(tempfile.mkdtemp(prefix="sophos-bench-peer-"))
    server = PeerServer(data, ollama_url, placement)
    try:
        pid = await server.start()
        client = get_client(url=server.url, timeout=httpx.Timeout(120))
        await single(peer_turn, client, load.single_turns, out)
        await parallel(peer_turn, client, pid, load, out)
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)


async def measure_bare(ollama_url: str, load: Load, out: Figures) -> None:
    data = Path(tempfile.mkdtemp(prefix="sophos-bench-bare-"))
    try:
        builder, saver_cm = bare_graph(str(data / "bare.db"), ollama_url)
        async with saver_cm as saver:
            graph = builder.compile(checkpointer=saver)
            await bare_turn(graph, {}, "warm up")
            await single(bare_turn, graph, load.single_turns, out)
            await bare_parallel(graph, load, out)
    finally:
        shutil.rmtree(data, ignore_errors=True)


async def measure_floor(ollama_url: str, load: Load, out: Figures) -> None:
    """The same graph on LangGraph's InMemorySaver, 64 conversations in this process: what
    LangGraph and ChatOllama cost alone, with no HTTP and no disk."""
    builder, _ = bare_graph(":memory:", ollama_url)
    graph = builder.compile(checkpointer=InMemorySaver())
    await bare_turn(graph, {}, "warm up")
    await bare_parallel(graph, load, out)


async def bare_parallel(graph: Any, load: Load, out: Figures) -> None:
    async def conversation(turns: int, latencies: list[float]) -> None:
        conv: dict[str, str] = {}
        for i in range(turns):
            latencies.append((await bare_turn(graph, conv, f"turn {i + 1}: say something short"))[0])

    await asyncio.gather(*(conversation(1, []) for _ in range(load.warmup)))
    latencies: list[float] = []
    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(conversation(load.turns, latencies) for _ in range(load.conversations)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    out.turns_per_s.append(len(latencies) / wall)
    out.p95.append(statistics.quantiles(latencies, n=20, method="inclusive")[18])
    out.cpu.append(cpu * 1000 / len(latencies))


# --- the table -------------------------------------------------------------------------------


def cell(values: list[float], unit: str) -> str:
    return describe(values, unit) if values else "-"


def ratio(ours: list[float], theirs: list[float]) -> str:
    return f"{statistics.median(ours) / statistics.median(theirs):.2f}x" if ours and theirs else "-"


def table(bare: Figures, peer: Figures, ours: Figures, sdk: Figures | None = None) -> list[tuple[str, ...]]:
    specs = [
        ("one conversation, turn p50 (POST -> end)", "turn", "ms", "<= 1.15x bare"),
        ("time to first token p50", "ttft", "ms", "-"),
        ("64 conversations: turns/s", "turns_per_s", "turns/s", ">= 2x peer"),
        ("64 conversations: turn p95", "p95", "ms", "<= 0.5x peer"),
        ("64 conversations: server CPU per turn", "cpu", "ms", "<= 0.5x peer"),
        ("RSS after the 64-conversation test", "rss", "MB", "-"),
    ]
    head = (
        "figure",
        "bare LangGraph + AsyncSqliteSaver",
        "LangGraph dev server",
        "Sophos",
        "Sophos / peer",
        "Sophos / bare",
        "target",
        "Sophos via SDK",
        "via SDK / peer",
    )
    rows = [head]
    sdk = sdk or Figures()
    for label, attr, unit, target in specs:
        b, p, o, k = getattr(bare, attr), getattr(peer, attr), getattr(ours, attr), getattr(sdk, attr)
        rows.append(
            (label, cell(b, unit), cell(p, unit), cell(o, unit), ratio(o, p), ratio(o, b), target, cell(k, unit), ratio(k, p))
        )
    return rows


def baseline_rows(base: Figures, ours: Figures, ref: str) -> list[tuple[str, ...]]:
    """This tree beside Sophos from `ref`, measured in the same repetitions."""
    specs = [
        ("one conversation, turn p50", "turn", "ms"),
        ("time to first token p50", "ttft", "ms"),
        ("64 conversations: turns/s", "turns_per_s", "turns/s"),
        ("64 conversations: turn p95", "p95", "ms"),
        ("64 conversations: server CPU per turn", "cpu", "ms"),
        ("RSS after the 64-conversation test", "rss", "MB"),
    ]
    rows = [("figure", f"Sophos {ref}", "Sophos (this tree)", "this tree / baseline")]
    for label, attr, unit in specs:
        b, o = getattr(base, attr), getattr(ours, attr)
        rows.append((label, cell(b, unit), cell(o, unit), ratio(o, b)))
    return rows


def floor_line(floor: Figures, peer: Figures) -> str:
    """The floor under any server on LangGraph and ChatOllama, beside the CPU target."""
    line = (
        f"floor: LangGraph + ChatOllama alone (the same graph, InMemorySaver, no HTTP, no disk), "
        f"64 conversations: {cell(floor.cpu, 'ms')} of CPU per turn"
    )
    if floor.cpu and peer.cpu:
        budget = statistics.median(peer.cpu) / 2
        line += (
            f" = {ratio(floor.cpu, peer.cpu)} the peer's; the target (0.5x the peer, {budget:.1f} ms) leaves "
            f"{budget - statistics.median(floor.cpu):.1f} ms a turn for HTTP, SSE and durable storage"
        )
    return line


def print_rows(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for n, r in enumerate(rows):
        print(" | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)))
        if n == 0:
            print("-+-".join("-" * w for w in widths))


async def section(args: argparse.Namespace) -> None:
    """Measure and print the side-by-side table (`make bench`, or `--only peers`)."""
    if not (PEER_VENV / "bin" / "langgraph").exists():
        print(f"peers: {PEER_VENV} is missing (`make bench` creates it); the LangGraph dev server is skipped")
    load = Load(single_turns=args.peer_single_turns)
    bare, peer, ours, floor, sdk, base = Figures(), Figures(), Figures(), Figures(), Figures(), Figures()
    ref = args.peers_baseline_ref or os.environ.get("BENCH_PEERS_BASELINE_REF") or None
    where = UNPINNED if args.peers_unpinned else split_cpus()
    busy0, t0 = _machine(), time.perf_counter()
    with placed(where.load), fake_ollama_process() as model, worktree_or_none(ref) as base_tree:
        for rep in range(1, args.reps + 1):
            with placed(where.server):
                await measure_bare(model.url, load, bare)
            if (PEER_VENV / "bin" / "langgraph").exists():
                await measure_peer(model.url, load, peer, where)
            if base_tree is not None:
                await measure_sophos(model.url, load, base, base_tree, where)
            await measure_sophos(model.url, load, ours, placement=where)
            await measure_sophos_sdk(model.url, load, sdk, placement=where)
            with placed(where.server):
                await measure_floor(model.url, load, floor)
            print(
                f"  rep {rep}: bare {bare.turn[-1]:.1f} ms; peer "
                f"{f'{peer.turn[-1]:.0f} ms, {peer.turns_per_s[-1]:.1f} turns/s' if peer.turn else '-'}; "
                f"sophos {ours.turn[-1]:.1f} ms, {ours.turns_per_s[-1]:.1f} turns/s; "
                f"sophos via SDK {sdk.turn[-1]:.1f} ms, {sdk.turns_per_s[-1]:.1f} turns/s",
                flush=True,
            )
    print_rows(table(bare, peer, ours, sdk))
    print(floor_line(floor, peer))
    if ref is not None:
        print()
        print_rows(baseline_rows(base, ours, ref))
    load_avg = (_machine() - busy0) / (time.perf_counter() - t0)
    print(f"machine: {os.cpu_count()} cores, {load_avg:.2f} cores busy on average while measuring (all processes)")
    print(
        "placement: "
        + (
            f"each system measured on CPU {','.join(map(str, sorted(where.server)))}, the client and "
            f"the fake model on CPU {','.join(map(str, sorted(where.load or ())))}"
            if where.server is not None
            else "none (every process where the kernel puts it)"
        )
    )


def _machine() -> float:
    from bench.serving import machine_busy_seconds

    return machine_busy_seconds()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--peer-single-turns",
        type=int,
        default=Load.single_turns,
        help="turns of the one-conversation figures in the side-by-side section",
    )
    parser.add_argument(
        "--peers-unpinned",
        action="store_true",
        help="run every process where the kernel puts it (by default each system measured is "
        "pinned to one CPU, and the load to the others)",
    )
    parser.add_argument(
        "--peers-baseline-ref",
        default=None,
        help="git ref whose Sophos runs beside this tree's in each repetition (env BENCH_PEERS_BASELINE_REF)",
    )
