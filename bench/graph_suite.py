"""LangGraph's own integration suite (langgraph-sdk's sdist, tests/integration, 55 tests)
against `langgraph dev` and against `sophos serve`, both hosting the suite's own
integration/langgraph.json, each in a private network namespace where it owns port 2024
(tests/support/sdk_suite.py runs them). The score is per test: the outcome in each
repetition, since a few tests of the suite depend on timing. A test that passed against
`langgraph dev` in any repetition is one Sophos is to pass (issue 44).
Usage: python -m bench --only graph-suite [--suite-reps 1] [--suite-timeout 60]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from tests.support.sdk_suite import PEER_VENV, SuiteRun, run_suite

SERVERS = (("langgraph-dev", "langgraph dev"), ("sophos", "sophos serve"))


def cell(runs: list[SuiteRun], test: str) -> str:
    """`pass`, `fail`, or the count over repetitions (`1/2 pass`)."""
    outcomes = [run.outcomes.get(test, "missing") for run in runs]
    passed = outcomes.count("passed")
    if len(runs) == 1:
        return "pass" if passed else outcomes[0].replace("failed", "fail")
    return f"{passed}/{len(runs)} pass"


def table(runs: dict[str, list[SuiteRun]]) -> list[tuple[str, ...]]:
    tests = sorted({t for server_runs in runs.values() for run in server_runs for t in run.outcomes})
    rows = [("test", *(label for server, label in SERVERS if server in runs))]
    for test in tests:
        rows.append((test, *(cell(runs[server], test) for server, _ in SERVERS if server in runs)))
    return rows


def print_rows(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print(" | ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
        if n == 0:
            print("-+-".join("-" * w for w in widths))


def passed_by(server_runs: list[SuiteRun]) -> set[str]:
    return {t for run in server_runs for t in run.passed}


async def section(args: argparse.Namespace) -> None:
    """Run the suite against each server, `--suite-reps` times, and print the score table."""
    servers = [s for s, _ in SERVERS if s != "langgraph-dev" or (PEER_VENV / "bin" / "langgraph").exists()]
    if "langgraph-dev" not in servers:
        print(f"graph-suite: {PEER_VENV} is missing (`make bench` creates it); langgraph dev is skipped")
    runs: dict[str, list[SuiteRun]] = {s: [] for s in servers}
    for rep in range(1, args.suite_reps + 1):
        for server in servers:
            work = Path(tempfile.mkdtemp(prefix=f"sophos-bench-suite-{server}-"))
            try:
                run = run_suite(server, work, timeout=args.suite_timeout)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            runs[server].append(run)
            print(f"  rep {rep}: {server}: {run.summary()} in {run.seconds:.0f} s", flush=True)
    print_rows(table(runs))
    for server, label in SERVERS:
        if server in runs:
            scores = ", ".join(str(run.count("passed")) for run in runs[server])
            print(f"{label}: passed {scores} of {len(runs[server][0].outcomes)} (per repetition)")
    if "langgraph-dev" in runs:
        peer = passed_by(runs["langgraph-dev"])
        ours = {t for t in peer if all(t in run.passed for run in runs["sophos"])}
        print(
            f"of the {len(peer)} tests that pass against langgraph dev, sophos serve passes {len(ours)}; "
            f"not yet: {', '.join(sorted(peer - ours)) or 'none'}"
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--suite-reps", type=int, default=1, help="repetitions of the graph-suite section")
    parser.add_argument("--suite-timeout", type=float, default=60, help="seconds one test of the suite may take")
