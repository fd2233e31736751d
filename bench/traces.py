"""What tracing costs a turn (issue 47): the server's CPU per turn with OTLP tracing off (no
endpoint) and on (spans recorded with each step, shipped by the supervisor to a receiver in
this process), A/B interleaved, through a real `sophos serve` and a fake Ollama in a process
of its own. A turn is POST /api/chat of a new conversation and its stream read to the end
(one model call: the run's span and the call's span); with tracing on, the measure ends once
the receiver has every span, so the shipping is counted too (both arms then measure the same
idle time, in which the server's own loops run). The target is at most 3% more.
The load average is printed: on a busy machine the spread of the samples says more than
their median. So the tracing work is also measured alone, in this process, steadier: a run's
and a model call's spans recorded and ended on a SQLite file, then shipped (every 50 turns)
to a receiver in a process of its own, as CPU per turn.

Usage: python -m bench.traces [--turns 60] [--reps 3] [--results DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
from tests.support.otlp_receiver import OtlpReceiver

from bench.concurrency import turn
from bench.serving import ROOT, CpuMeter, FakeModel, Server, Tree, fake_ollama_process, free_port
from bench.table import RESULTS, recording

TARGET = 3.0  # percent
SHIP_SECONDS = 1.0  # between two shipments (OTEL_BSP_SCHEDULE_DELAY; 5 s by default, which ships bigger batches)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


async def sample(model: FakeModel, turns: int, receiver: OtlpReceiver | None) -> float:
    """Server CPU milliseconds per turn over `turns` turns (after a warm-up)."""
    with tempfile.TemporaryDirectory(prefix="sophos-bench-traces-") as tmp:
        server = Server(Tree("this tree", ROOT), Path(tmp), model.url)
        if receiver is not None:
            server.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
            server.env["OTEL_BSP_SCHEDULE_DELAY"] = str(int(SHIP_SECONDS * 1000))
        pid = await server.start()
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
                for i in range(3):
                    await turn(client, None, f"warm-up {i}")
                shipped = len(receiver.snapshot()) if receiver is not None else 0
                meter = CpuMeter(pid, (model.pid,))
                meter.start()
                for i in range(turns):
                    await turn(client, None, f"turn {i}: say something short")
                # both arms measure the same idle time after the turns (the server's own loops
                # run in it), in which tracing ships this sample's spans: that counts too
                settled = time.monotonic() + SHIP_SECONDS + 1.5
                if receiver is not None:
                    while len(receiver.snapshot()) < shipped + 2 * turns and time.monotonic() < settled + 30:
                        await asyncio.sleep(0.05)
                    if len(receiver.snapshot()) < shipped + 2 * turns:
                        raise RuntimeError("the receiver did not get every span")
                await asyncio.sleep(max(settled - time.monotonic(), 0))
                _, cpu, _, _ = meter.stop()
            return cpu / turns * 1000
        finally:
            server.stop()


async def work_alone(turns: int = 500, every: int = 50) -> float:
    """CPU milliseconds per turn of the tracing work itself (RunTracer and TraceShipper): a
    turn's usage row is written with tracing off too, so what tracing adds is measured as
    the difference between the two, each on a file of its own."""
    return await _turns(turns, every, traced=True) - await _turns(turns, every, traced=False)


async def _turns(turns: int, every: int, traced: bool) -> float:
    from datetime import date

    from adapters.otel.config import trace_config
    from adapters.otel.sink import OtlpSpanSink
    from adapters.sqlite.runs import SqliteRunStore
    from adapters.sqlite.traces import SqliteSpanStore
    from adapters.sqlite.usage import SqliteUsageStore
    from domain.usage import Cost
    from services.traces import RunTracer, TraceShipper

    port = free_port()
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}"}
    receiver = subprocess.Popen([sys.executable, "-m", "tests.support.otlp_receiver", str(port)], env=env, stdout=subprocess.PIPE)
    assert receiver.stdout is not None
    receiver.stdout.readline()  # listening
    with tempfile.TemporaryDirectory(prefix="sophos-bench-traces-") as tmp:
        runs = await SqliteRunStore.open(f"{tmp}/sophos.db")
        try:
            store, usage = SqliteSpanStore(*runs.workers()), SqliteUsageStore(*runs.workers())
            tracer = RunTracer(store)
            shipper = TraceShipper(store, OtlpSpanSink(trace_config({"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"})))
            cost, day = Cost(120, 40, 0.5, 0.0, 1), date(2026, 12, 7)
            started = time.process_time()
            for i in range(turns):
                if not traced:  # the model call's usage row, written with tracing off too
                    await usage.add("user", "qwen3", day, cost)
                    continue
                # as the agent node does: the run's and the call's span before the call, the
                # call's end with its usage row
                run = await tracer.run_span(f"run-{i}", "conversation", resumed=False)
                span = await tracer.model_call_started(run, 1, 0, "qwen3")
                await usage.add("user", "qwen3", day, cost, tracer.model_call_ending(span, (120, 40), "stop"))
                if (i + 1) % every == 0:
                    await shipper.ship_once()
            cpu = time.process_time() - started
            await shipper.aclose()
        finally:
            await runs.aclose()
            receiver.terminate()
            receiver.wait()
    return cpu / turns * 1000


async def compare(turns: int, reps: int) -> tuple[list[float], list[float]]:
    off: list[float] = []
    on: list[float] = []
    receiver = OtlpReceiver().start()
    try:
        with fake_ollama_process() as model:
            for rep in range(reps):
                for label, into, sink in (("off", off, None), ("on", on, receiver)):
                    into.append(await sample(model, turns, sink))
                    print(f"rep {rep + 1} tracing {label}: {into[-1]:.2f} ms CPU/turn (load average {load()})", flush=True)
    finally:
        receiver.stop()
    return off, on


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    started = datetime.now(UTC)
    facts = {
        "command": "`python -m bench.traces" + "".join(f" {a}" for a in sys.argv[1:]) + "`",
        "machine": f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, load average {load()} at the start",
    }
    with recording("traces", started, facts, args.results):
        off, on = await compare(args.turns, args.reps)
        a, b = statistics.median(off), statistics.median(on)
        cost = (b - a) / a * 100
        print("\n| tracing | server CPU ms/turn (median) | samples |\n|---|---|---|")
        print(f"| off | {a:.2f} | {', '.join(f'{x:.2f}' for x in off)} |")
        print(f"| on | {b:.2f} | {', '.join(f'{x:.2f}' for x in on)} |")
        verdict = "met" if cost <= TARGET else "NOT met"
        print(f"\ntracing on costs {cost:+.1f}% CPU per turn (target ≤ {TARGET:g}%: {verdict}); load average {load()} at the end")
        alone = statistics.median([await work_alone() for _ in range(3)])
        share = alone / a * 100
        print(
            f"the tracing work alone: {alone:.2f} ms CPU per turn, {share:.1f}% of a turn's {a:.2f} ms "
            f"(target ≤ {TARGET:g}%: {'met' if share <= TARGET else 'NOT met'}); load average {load()}"
        )


if __name__ == "__main__":
    asyncio.run(main())
