"""Concurrency: C conversations in parallel, T turns each, through a real `sophos serve` over
HTTP and SSE, on a fake Ollama that answers at once. The same scenario runs against a baseline
source tree (a git ref, checked out as a temporary worktree) and this tree, alternately, in the
same run, so the two are compared on the same machine under the same load.

A turn is `POST /api/chat` then `GET /api/chat?conversation=ID` read up to `end` or
`chat-error`; its latency runs from sending the POST to receiving that last event.

Usage: python -m bench.concurrency [--baseline-ref REF|none] [--reps 3] [--parallel 64]
       [--parallel-turns 5] [--single-turns 50]   (or: make bench-concurrency)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.serving import ROOT, CpuMeter, FakeModel, Server, Tree, fake_ollama_process, worktree_or_none
from bench.table import Row, print_table

DEFAULT_REF = "6723370"  # main before the lifecycle rewrite (issue 10)
TERMINAL = ("end", "chat-error")
WORSE_BY = 0.10  # a figure more than 10% worse than the baseline's fails
BUSY_MACHINE = 0.2  # cores used by other processes meanwhile, past which the table says so


@dataclass(frozen=True)
class Scenario:
    conversations: int = 64
    turns: int = 5
    warmup: int = 16  # conversations of one turn each, in parallel, before measuring (excluded)
    single_turns: int = 50


@dataclass(frozen=True)
class Sample:
    turns_per_s: float
    p50_ms: float
    p95_ms: float
    cpu_ms_per_turn: float
    single_p50_ms: float
    harness_cpu_ms_per_turn: float  # this process (the client) and the fake model
    background_cores: float  # CPU used by other processes on the machine meanwhile (noise)


@dataclass(frozen=True)
class Figure:
    attr: str
    label: str
    unit: str
    higher_is_better: bool


def figures(s: Scenario) -> list[Figure]:
    par = f"{s.conversations} conversations x {s.turns} turns"
    return [
        Figure("turns_per_s", f"{par}: throughput", "turns/s", True),
        Figure("p50_ms", f"{par}: turn latency p50", "ms", False),
        Figure("p95_ms", f"{par}: turn latency p95", "ms", False),
        Figure("cpu_ms_per_turn", f"{par}: server CPU per turn", "ms", False),
        Figure("single_p50_ms", f"one conversation x {s.single_turns} turns: turn p50", "ms", False),
    ]


class TurnFailed(RuntimeError):
    """Raised when a turn ends with `chat-error` or a POST is refused."""


# --- the scenario ----------------------------------------------------------------------


async def terminal_event(response: httpx.Response) -> tuple[str, str]:
    """Read an SSE stream up to its last event: (event, data). A run that ended before the
    GET attached is answered with a single `end` without id, which counts the same."""
    event, data = "", ""
    async for line in response.aiter_lines():
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data = line[5:].strip()
        elif line == "" and event in TERMINAL:
            return event, data
    raise TurnFailed(f"stream closed before its last event (last seen: {event or 'none'})")


async def turn(client: httpx.AsyncClient, cid: str | None, message: str) -> tuple[str, float]:
    """One turn; returns the conversation id and the latency in ms."""
    t = time.perf_counter()
    body = {"message": message} if cid is None else {"message": message, "conversation": cid}
    r = await client.post("/api/chat", json=body)
    if r.status_code != 200:
        raise TurnFailed(f"POST /api/chat: {r.status_code} {r.text}")
    cid = str(r.json()["conversation"])
    async with client.stream("GET", "/api/chat", params={"conversation": cid}) as stream:
        event, data = await terminal_event(stream)
    ms = (time.perf_counter() - t) * 1000
    if event != "end":
        raise TurnFailed(f"conversation {cid}: {event} {data}")
    return cid, ms


async def conversation(client: httpx.AsyncClient, turns: int, latencies: list[float]) -> None:
    cid: str | None = None
    for i in range(turns):
        cid, ms = await turn(client, cid, f"turn {i + 1}: say something short")
        latencies.append(ms)


async def run_scenario(url: str, meter: CpuMeter, s: Scenario) -> Sample:
    limits = httpx.Limits(max_connections=s.conversations * 2 + 8, max_keepalive_connections=s.conversations * 2 + 8)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as client:
        await asyncio.gather(*(conversation(client, 1, []) for _ in range(s.warmup)))
        latencies: list[float] = []
        meter.start()
        await asyncio.gather(*(conversation(client, s.turns, latencies) for _ in range(s.conversations)))
        wall, cpu, harness, background = meter.stop()
        single: list[float] = []
        await conversation(client, s.single_turns, single)
    return Sample(
        turns_per_s=len(latencies) / wall,
        p50_ms=statistics.median(latencies),
        p95_ms=statistics.quantiles(latencies, n=20, method="inclusive")[18],
        cpu_ms_per_turn=cpu * 1000 / len(latencies),
        single_p50_ms=statistics.median(single),
        harness_cpu_ms_per_turn=harness * 1000 / len(latencies),
        background_cores=background,
    )


async def measure(tree: Tree, model: FakeModel, s: Scenario) -> Sample:
    """One repetition on a fresh server and database."""
    data = Path(tempfile.mkdtemp(prefix="sophos-bench-concurrency-"))
    server = Server(tree, data, model.url)
    try:
        pid = await server.start()
        return await run_scenario(server.url, CpuMeter(pid, (os.getpid(), model.pid)), s)
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)


# --- reporting -------------------------------------------------------------------------


def describe(values: list[float], unit: str) -> str:
    """Median with the range of the repetitions: `61.2 turns/s [59.0-63.1]`."""
    med = statistics.median(values)
    digits = 0 if med >= 100 else 1
    if len(values) == 1:
        return f"{med:.{digits}f} {unit}"
    return f"{med:.{digits}f} {unit} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def spread(values: list[float]) -> float:
    """(max - min) / median: how far apart the repetitions landed."""
    return (max(values) - min(values)) / statistics.median(values)


def rows(s: Scenario, baseline: list[Sample], current: list[Sample]) -> list[Row]:
    out: list[Row] = []
    for f in figures(s):
        ours = [getattr(x, f.attr) for x in current]
        mine = describe(ours, f.unit) + f" ±{spread(ours) / 2:.0%}"
        if not baseline:
            out.append((f.label, "-", mine, "-", True))
            continue
        base = [getattr(x, f.attr) for x in baseline]
        ratio = statistics.median(ours) / statistics.median(base)
        ok = ratio >= 1 - WORSE_BY if f.higher_is_better else ratio <= 1 + WORSE_BY
        target = f">= {1 - WORSE_BY:.1f}x" if f.higher_is_better else f"<= {1 + WORSE_BY:.1f}x"
        out.append((f.label, describe(base, f.unit) + f" ±{spread(base) / 2:.0%}", f"{mine} = {ratio:.2f}x", target, ok))
    return out


def sample_line(label: str, rep: int, x: Sample) -> str:
    return (
        f"  {label:<18} rep {rep}: {x.turns_per_s:6.1f} turns/s  p50 {x.p50_ms:6.0f} ms  p95 {x.p95_ms:6.0f} ms  "
        f"cpu {x.cpu_ms_per_turn:5.1f} ms/turn  single p50 {x.single_p50_ms:5.1f} ms  "
        f"(harness {x.harness_cpu_ms_per_turn:.1f} ms/turn, background {x.background_cores:.2f} cores)"
    )


async def compare(baseline_ref: str | None, reps: int, s: Scenario) -> tuple[list[Row], list[Sample]]:
    """Baseline and current alternately, `reps` times each: one row per figure, and every sample."""
    current = Tree("current", ROOT)
    base_samples: list[Sample] = []
    our_samples: list[Sample] = []
    with fake_ollama_process() as model, worktree_or_none(baseline_ref) as base:
        for rep in range(1, reps + 1):
            for tree, samples in ((base, base_samples), (current, our_samples)):
                if tree is None:
                    continue
                sample = await measure(tree, model, s)
                samples.append(sample)
                print(sample_line(tree.label, rep, sample), flush=True)
    return rows(s, base_samples, our_samples), base_samples + our_samples


def busy_machine_note(samples: list[Sample]) -> str | None:
    """A warning when other processes took a noticeable share of the CPUs while measuring."""
    worst = max(x.background_cores for x in samples)
    if worst < BUSY_MACHINE:
        return None
    least = min(x.background_cores for x in samples)
    return (
        f"note: other processes used {least:.2f}-{worst:.2f} of {os.cpu_count()} cores while measuring; "
        "throughput and latency move with that load, so compare ratios across reruns on a quiet machine"
    )


async def section(args: argparse.Namespace) -> None:
    """Measure and print the concurrency table (the `--only concurrency` part of `make bench`)."""
    ref = baseline_ref(args.baseline_ref)
    table, samples = await compare(ref, args.reps, scenario(args))
    print_table(head(ref), table)
    note = busy_machine_note(samples)
    if note:
        print(note)


def baseline_ref(value: str | None) -> str | None:
    """The ref to compare with: the flag, else BENCH_BASELINE_REF, else DEFAULT_REF; `none`
    measures this tree alone."""
    ref = value or os.environ.get("BENCH_BASELINE_REF") or DEFAULT_REF
    return None if ref.lower() == "none" else ref


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--baseline-ref",
        default=None,
        help=f"git ref to compare with (env BENCH_BASELINE_REF, default {DEFAULT_REF}; 'none': skip)",
    )
    parser.add_argument("--reps", type=int, default=3, help="repetitions of each tree, alternating")
    parser.add_argument("--parallel", type=int, default=Scenario.conversations, help="conversations in parallel")
    parser.add_argument("--parallel-turns", type=int, default=Scenario.turns, help="turns per conversation")
    parser.add_argument("--single-turns", type=int, default=Scenario.single_turns)


def scenario(args: argparse.Namespace) -> Scenario:
    return Scenario(conversations=args.parallel, turns=args.parallel_turns, single_turns=args.single_turns)


def head(ref: str | None) -> tuple[str, str, str, str]:
    return ("figure (real server, fake model at once)", f"baseline ({ref or 'none'})", "sophos (this tree)", "target")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    add_arguments(parser)
    args = parser.parse_args()
    print(f"concurrency on {os.cpu_count()} cores, python {sys.version.split()[0]} ...", flush=True)
    await section(args)


if __name__ == "__main__":
    asyncio.run(main())
