"""Endurance through a real `sophos serve` on the fake Ollama: a 200-turn thread (is turn 200 as
fast as turn 1?) and the server's RSS after 1,000 conversations.

A turn is one `POST /api/chat` with `Accept: text/event-stream` read up to `end`. Latency moves
with the machine's load; the server's CPU per turn (from /proc) much less, so both are shown.
On a VM whose host takes time away, the machine's speed also drifts over the run, and the
sequential rows (the last 20 turns against turns 2-21, seconds apart) take that drift for
growth. So the thread then goes on for 20 more turns alternating with turns 2-21 of a new
conversation: each pair runs at the same moment, and the ratio of the two is the thread's
growth alone.
Usage: python -m bench --only endurance [--long-turns 200] [--many 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
from pathlib import Path

import httpx

from bench.peers import rss_mb, sophos_turn
from bench.serving import ROOT, Server, Tree, fake_ollama_process
from bench.table import Row, print_table

WINDOW = 20  # turns averaged at each end of the thread
GROWTH = 1.3  # turn 200 may cost at most this much more than turn 1
RSS_MB = 120.0


def cpu_seconds(pid: int) -> float:
    """CPU time of a process's live threads in nanoseconds' precision (/proc/<pid>/stat
    counts 10 ms ticks, too coarse for one turn)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            pass  # a thread that just ended
    return total / 1e9


def written_bytes(pid: int) -> float:
    """Bytes the process has handed to write calls (files and sockets): /proc/<pid>/io wchar."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return float(line.split()[1])
    return 0.0


async def long_thread(
    client: httpx.AsyncClient, pid: int, turns: int, conv: dict[str, str]
) -> tuple[list[float], list[float], list[float]]:
    """The latency of each turn of one conversation, and the server's CPU seconds and bytes
    written, read before each turn and after the last."""
    latency, cpu, written = [], [], []
    for i in range(turns):
        cpu.append(cpu_seconds(pid))
        written.append(written_bytes(pid))
        ms, _ = await sophos_turn(client, conv, f"turn {i + 1}: say something short")
        latency.append(ms)
    cpu.append(cpu_seconds(pid))
    written.append(written_bytes(pid))
    return latency, cpu, written


async def interleaved(client: httpx.AsyncClient, pid: int, old: dict[str, str]) -> dict[str, list[float]]:
    """WINDOW more turns of the old thread, each right after a turn (2 to WINDOW + 1) of a
    new conversation: each turn's latency and server CPU seconds, by thread."""
    new: dict[str, str] = {}
    await sophos_turn(client, new, "a new conversation: turn 1")
    out: dict[str, list[float]] = {"new ms": [], "new cpu": [], "old ms": [], "old cpu": []}
    for i in range(WINDOW):
        for name, conv in (("new", new), ("old", old)):
            before = cpu_seconds(pid)
            ms, _ = await sophos_turn(client, conv, f"turn {i + 2}: say something short")
            out[f"{name} cpu"].append(cpu_seconds(pid) - before)
            out[f"{name} ms"].append(ms)
    return out


async def many(client: httpx.AsyncClient, n: int, parallel: int = 16) -> None:
    gate = asyncio.Semaphore(parallel)

    async def one(i: int) -> None:
        async with gate:
            await sophos_turn(client, {}, f"conversation {i}: hello")

    await asyncio.gather(*(one(i) for i in range(n)))


def growth_row(label: str, a: float, b: float) -> Row:
    return (label, f"{a:.1f} ms", f"{b:.1f} ms = {b / a:.2f}x", f"<= {GROWTH}x", b / a <= GROWTH)


def latency_row(label: str, latency: list[float]) -> Row:
    # skip the very first turn (imports, first connection), as any warm server would have
    return growth_row(label, statistics.median(latency[1 : WINDOW + 1]), statistics.median(latency[-WINDOW:]))


def per_turn(counter: list[float]) -> tuple[float, float]:
    """A cumulative counter read before each turn: its mean per turn over turns 2-21 and the last 20."""
    return (counter[WINDOW + 1] - counter[1]) / WINDOW, (counter[-1] - counter[-1 - WINDOW]) / WINDOW


def cpu_row(label: str, cpu: list[float]) -> Row:
    first, last = per_turn(cpu)
    return growth_row(label, first * 1000, last * 1000)


def written_row(label: str, written: list[float]) -> Row:
    first, last = (b / 1024 for b in per_turn(written))
    return (label, f"{first:.0f} KiB", f"{last:.0f} KiB = {last / first:.2f}x", "(measured)", True)


async def section(args: argparse.Namespace) -> None:
    data = Path(tempfile.mkdtemp(prefix="sophos-bench-endurance-"))
    with fake_ollama_process() as model:
        server = Server(Tree("current", ROOT), data, model.url)
        try:
            pid = await server.start()
            async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
                conv: dict[str, str] = {}
                latency, cpu, written = await long_thread(client, pid, args.long_turns, conv)
                pairs = await interleaved(client, pid, conv)
                await many(client, args.many)
            rss = rss_mb(pid)
        finally:
            server.stop()
            shutil.rmtree(data, ignore_errors=True)
    n = args.long_turns
    rows = [
        latency_row(f"{n}-turn thread: turn latency p50, last {WINDOW} / first {WINDOW}", latency),
        cpu_row(f"{n}-turn thread: server CPU per turn (mean), last {WINDOW} / first {WINDOW}", cpu),
        written_row(f"{n}-turn thread: bytes written per turn (wchar: file and sockets)", written),
        growth_row(
            f"turns {n + 1}-{n + WINDOW} / a new thread's 2-{WINDOW + 1}, alternating: latency p50",
            statistics.median(pairs["new ms"]),
            statistics.median(pairs["old ms"]),
        ),
        growth_row(
            f"turns {n + 1}-{n + WINDOW} / a new thread's 2-{WINDOW + 1}, alternating: CPU (mean)",
            statistics.mean(pairs["new cpu"]) * 1000,
            statistics.mean(pairs["old cpu"]) * 1000,
        ),
        (f"RSS after the long thread and {args.many} conversations", "-", f"{rss:.0f} MB", f"<= {RSS_MB:.0f} MB", rss <= RSS_MB),
    ]
    print_table(("figure (real server, fake model at once)", "turns 2-21", "last turns", "target"), rows)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--long-turns", type=int, default=200, help="turns of the long thread (endurance)")
    parser.add_argument("--many", type=int, default=1000, help="conversations before reading the RSS (endurance)")
