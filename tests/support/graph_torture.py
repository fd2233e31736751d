"""The kill -9 harness over LangGraph's integration suite's streamed runs (issue 44): a real
`sophos serve --langgraph-json` hosting the suite's own graphs (the langgraph-sdk sdist's
`integration/langgraph.json`, tests/support/sdk_suite.py), driven through the SDK as the
suite's streamed tests drive them: `runs.stream` with the suite's input, then, for the
`agent` graph whose `ask_human` node calls `interrupt()`, a streamed `command.resume`.

Each trial picks a graph, one of its streamed runs and a random chunk of that run's stream:
when the client has read that chunk the server is SIGKILLed, started again with
AUTO_RESUME=true, and the client re-joins the run (`runs.join_stream` after the last event id
it read), answers the interrupt if the thread waits on one, and checks that
- the thread ends in the state the uninterrupted run of the graph gives (its values, message
  ids aside: the server gives an input message a new one each time), idle, no run going;
- an interrupt outlived the kill: it is still there, once, and answering it once finishes
  the thread (a second answer finds nothing to resume).

`deep_agent` is left out: its fake models' scripts are positions in a list held in the
server process's memory, so a restart mid-run replays the supervisor's first answer (under
any server); the graph is not deterministic across a restart, the server is not at fault.

    python -m tests.support.graph_torture --kills 100 [--seed 7] [--results bench/results]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.support.app import ROOT, app_env
from tests.support.sdk_suite import graph_packages, sdist_root
from tests.support.server import LiveServer, free_port

MODES = ["values", "updates", "messages-tuple", "custom"]
SUITE_INPUT = {"messages": [], "value": "init", "items": []}  # what the suite's tests send the `agent` graph
ANSWER = "yes"


@dataclass(frozen=True)
class Scenario:
    """A graph, the input the suite gives it, and whether its run stops at an interrupt."""

    graph: str
    input: dict[str, Any]
    interrupts: bool = False

    @property
    def phases(self) -> int:  # streamed runs: the first, then the answer to the interrupt
        return 2 if self.interrupts else 1


SCENARIOS = (
    Scenario("agent", SUITE_INPUT, interrupts=True),
    Scenario("tools_agent", {"messages": [{"role": "user", "content": "research v3"}]}),
    Scenario("factory_agent", {"text": "hi"}),
)


@dataclass
class Tallies:
    kills: int = 0
    trials: int = 0
    cut_runs: int = 0  # runs the kill stopped before they ended (the adopter resumed them)
    interrupts_answered: int = 0
    rejoined_chunks: int = 0
    violations: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return not self.violations

    def table(self) -> str:
        rows = [(k, v) for k, v in vars(self).items() if k != "violations"] + [("violations", len(self.violations))]
        return "\n".join(f"{k:<22} {v}" for k, v in rows)


def normalized(values: Any) -> Any:
    """A thread's values with each message's `id` dropped where the server makes one up."""
    if isinstance(values, dict):
        return {k: ([_message(m) for m in v] if k == "messages" and isinstance(v, list) else v) for k, v in values.items()}
    return values


def _message(m: Any) -> Any:
    return {k: v for k, v in m.items() if k != "id"} if isinstance(m, dict) else m


class GraphTorture:
    def __init__(self, workdir: Path, seed: int) -> None:
        self.rng = random.Random(seed)
        self.t = Tallies()
        project = workdir / "integration"
        shutil.copytree(sdist_root() / "integration", project, dirs_exist_ok=True)
        # the graphs' packages (langchain, deepagents) on the server's import path as a local dependency
        config = json.loads((project / "langgraph.json").read_text())
        config["dependencies"] = [*config.get("dependencies", []), str(graph_packages())]
        (project / "langgraph.json").write_text(json.dumps(config))
        self.lg_port = free_port()
        env = app_env(
            workdir,
            MODEL_BACKEND="demo",
            TOOLS_BACKEND="none",
            LANGGRAPH_JSON=str(project / "langgraph.json"),
            LANGGRAPH_API_PORT=str(self.lg_port),
            AUTO_RESUME="true",
        )
        self.server = LiveServer(env, workdir)
        self.client: SyncLangGraphClient = get_sync_client(url=f"http://127.0.0.1:{self.lg_port}", timeout=60)
        self.reference: dict[str, Any] = {}
        self.chunks: dict[tuple[str, int], int] = {}  # chunks of each phase's uninterrupted stream

    def start(self) -> None:
        self.server.start(timeout=180)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.lg_port}/ok", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError("the LangGraph API did not answer")

    def phase_stream(self, tid: str, scenario: Scenario, phase: int) -> Any:
        if phase == 0:
            return self.client.runs.stream(tid, scenario.graph, input=scenario.input, stream_mode=MODES)
        return self.client.runs.stream(tid, scenario.graph, command={"resume": ANSWER}, stream_mode=MODES)

    def learn(self) -> None:
        """Each scenario once without a kill: its final values and each phase's chunk count."""
        for scenario in SCENARIOS:
            tid = self.client.threads.create()["thread_id"]
            for phase in range(scenario.phases):
                self.chunks[scenario.graph, phase] = sum(1 for _ in self.phase_stream(tid, scenario, phase))
            self.reference[scenario.graph] = normalized(self.client.threads.get_state(tid)["values"])

    def trial(self) -> None:
        scenario = self.rng.choice(SCENARIOS)
        cut_phase = self.rng.randrange(scenario.phases)
        cut_after = self.rng.randint(1, self.chunks[scenario.graph, cut_phase])
        tid = self.client.threads.create()["thread_id"]
        where = f"{scenario.graph} thread {tid} phase {cut_phase} chunk {cut_after}"
        self.t.trials += 1
        for phase in range(scenario.phases):
            if phase > 0 and not self.waits_once(tid, where):
                return
            if phase == cut_phase:
                self.cut(tid, scenario, phase, cut_after, where)
            else:
                for _ in self.phase_stream(tid, scenario, phase):
                    pass
            if phase > 0:
                self.t.interrupts_answered += 1
        self.check_end(tid, scenario, where)

    def cut(self, tid: str, scenario: Scenario, phase: int, after: int, where: str) -> None:
        """Stream the phase's run, SIGKILL the server once chunk `after` is read, start it
        again and re-join the run from the last event id read."""
        run_id, last_id = None, None
        stream = self.phase_stream(tid, scenario, phase)
        for i, part in enumerate(stream, start=1):
            if part.event == "metadata":
                run_id = part.data["run_id"]
            last_id = part.id or last_id
            if i == after:
                self.server.kill()  # before the stream is let go: the server never sees the client leave
                self.t.kills += 1
                break
        stream.close()
        self.start()
        if run_id is None:
            self.violation(f"no run id before the kill: {where}")
            return
        if any(r["metadata"].get("trigger") == "adopt" for r in self.client.runs.list(tid)):
            self.t.cut_runs += 1
        for _ in self.client.runs.join_stream(tid, run_id, last_event_id=last_id):
            self.t.rejoined_chunks += 1

    def waits_once(self, tid: str, where: str) -> bool:
        """The thread waits on the graph's one interrupt, and nothing else: answerable."""
        state = self.client.threads.get_state(tid)
        asked = [i["value"] for task in state["tasks"] for i in task.get("interrupts", [])]
        if self.client.threads.get(tid)["status"] != "interrupted" or asked != ["Are we good?"]:
            self.violation(f"not waiting on the interrupt once ({asked}, next {state['next']}): {where}")
            return False
        return True

    def check_end(self, tid: str, scenario: Scenario, where: str) -> None:
        self.wait_idle(tid, where)
        values = normalized(self.client.threads.get_state(tid)["values"])
        if values != self.reference[scenario.graph]:
            self.violation(f"values {values} != uninterrupted {self.reference[scenario.graph]}: {where}")
        going = [r["status"] for r in self.client.runs.list(tid) if r["status"] in ("pending", "running")]
        if going:
            self.violation(f"runs still going {going}: {where}")
        if scenario.interrupts:  # answered once: a second answer resumes nothing
            again = self.client.runs.wait(tid, scenario.graph, command={"resume": ANSWER})
            if normalized(again) != self.reference[scenario.graph]:
                self.violation(f"a second answer changed the thread: {normalized(again)}: {where}")

    def wait_idle(self, tid: str, where: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.client.threads.get(tid)["status"] == "idle":
                return
            time.sleep(0.05)
        self.violation(f"thread not idle after {timeout:.0f} s: {where}")

    def violation(self, what: str) -> None:
        self.t.violations.append(what)
        print(f"violation: {what}", flush=True)

    def stop(self) -> None:
        self.server.stop()


_STOP: list[int] = []


def stopping() -> bool:
    """SIGTERM asks the soak to end after the trial going: the report is of the kills so far."""
    return bool(_STOP)


def run(kills: int, seed: int, workdir: Path, progress: int = 0) -> Tallies:
    torture = GraphTorture(workdir, seed)
    torture.start()
    started = time.monotonic()
    try:
        torture.learn()
        while torture.t.kills < kills:
            if stopping():
                print(f"stopped after {torture.t.kills} kills (SIGTERM)", flush=True)
                break
            torture.trial()
            t = torture.t
            if progress and t.kills % progress == 0:
                print(
                    f"[{time.monotonic() - started:5.0f} s] kills {t.kills} cut runs {t.cut_runs} violations {len(t.violations)}",
                    flush=True,
                )
    finally:
        torture.stop()
    return torture.t


def report(tallies: Tallies, args: argparse.Namespace, seconds: float, load: tuple[float, float, float]) -> str:
    began = datetime.now(UTC) - timedelta(seconds=seconds)
    return "\n".join(
        [
            "# Soak: kill -9 of `sophos serve` hosting LangGraph's integration suite's graphs",
            "",
            f"- started: {began:%Y-%m-%d %H:%M} UTC",
            f"- command: `make soak-graphs N={args.kills}` (seed {args.seed}; SQLite, one process, AUTO_RESUME=true)"
            + (f"; stopped by SIGTERM after {tallies.kills} kills" if tallies.kills < args.kills else ""),
            f"- machine: {os.cpu_count()} cores; load average at the start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
            f"at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())} (shared with other engineers' work)",
            f"- graphs: {', '.join(s.graph for s in SCENARIOS)} (deep_agent left out: tests/support/graph_torture.py says why)",
            "",
            "```text",
            tallies.table(),
            f"{'seconds':<22} {seconds:.0f}",
            *(f"violation: {v}" for v in tallies.violations[:20]),
            "```",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--results", type=Path, help="write a dated report into this directory")
    args = parser.parse_args()
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="sophos-soak-graphs-"))
    workdir.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda number, _: _STOP.append(number))
    load, started = os.getloadavg(), time.monotonic()
    tallies = run(args.kills, args.seed, workdir, progress=10)
    text = report(tallies, args, time.monotonic() - started, load)
    print(text)
    if args.results is not None:
        out = args.results / f"{datetime.now(UTC):%Y-%m-%dT%H%MZ}-soak-graphs.md"
        out.write_text(text)
        print(f"written to {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    raise SystemExit(0 if tallies.ok() else 1)


if __name__ == "__main__":
    main()
