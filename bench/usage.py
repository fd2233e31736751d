"""Usage totals over a long run (issue 47 item 3): `--turns` turns of two users through the
HTTP API on a fake Ollama that reports token counts, now and then a tool call (two model
calls in one run) and a new conversation; then each user's row must equal, exactly, the sum
of the counts the fake model server reported for that user's calls, and the calls their
number. Exits non-zero (writing no results) when a total differs. A 19-turn form of the same
check is in `make test` (tests/integration/test_usage.py).

Usage: python -m bench.usage [--turns 1000] [--backend sqlite|postgres-url] [--results DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.metering import DAY, Setup, start_setup, turn

from bench.table import RESULTS, recording

USERS = ("ann", "bob")


def one_turn(setup: Setup, ollama: FakeOllama, who: str, i: int, cid: str | None) -> str | None:
    if i % 4 == 1:  # a tool call: two model calls in one run
        ollama.add({"tool_calls": [("demo__word_count", {"text": "a b c"})], "text": ""}, {"text": f"three {i}"})
    else:
        ollama.add({"text": f"answer number {i} " + "word " * (i % 13)})
    events = turn(setup, who, {"message": f"question {i}", **({"conversation": cid} if cid else {})})
    if events[-1][0] != "end":
        raise RuntimeError(f"turn {i} of {who} did not end: {events[-3:]}")
    return str(events[0][1]) if i % 5 else None  # a new conversation every fifth turn


def run(turns: int, database: dict[str, str]) -> dict[str, tuple[int, int, int, int, int, int]]:
    """Per user: (input, output, calls) reported by the model server and the same in the usage row."""
    with tempfile.TemporaryDirectory(prefix="sophos-bench-usage-") as tmp, fake_ollama() as ollama:
        setup = start_setup(Path(tmp), ollama, database)
        try:
            reported: dict[str, list[tuple[int, int]]] = {who: [] for who in USERS}
            cids: dict[str, str | None] = {who: None for who in USERS}
            for i in range(turns):
                who = USERS[i % 2]
                before = len(ollama.reported)
                cids[who] = one_turn(setup, ollama, who, i // 2, cids[who])
                reported[who] += ollama.reported[before:]
                if (i + 1) % 100 == 0:
                    print(f"{i + 1} turns, load average {load()}", flush=True)
            day = DAY.date().isoformat()
            answer = setup.client.get("/api/usage", params={"from": day, "to": day, "all": "true"}, headers=setup.tokens["admin"])
            rows = {r["user"]: r for r in answer.json()["rows"]}
        finally:
            setup.client.__exit__(None, None, None)
    out = {}
    for who in USERS:
        r = rows[who]
        sent = (sum(i for i, _ in reported[who]), sum(o for _, o in reported[who]), len(reported[who]))
        out[who] = (*sent, r["inputTokens"], r["outputTokens"], r["calls"])
    return out


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--database-url", default="", help="a PostgreSQL URL (default: SQLite)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    started = datetime.now(UTC)
    facts = {
        "command": "`python -m bench.usage" + "".join(f" {a}" for a in sys.argv[1:]) + "`",
        "machine": f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, load average {load()} at the start",
    }
    database = {"DATABASE_URL": args.database_url} if args.database_url else {}
    with recording("usage", started, facts, args.results):
        began = time.monotonic()
        totals = run(args.turns, database)
        print("\n| user | input tokens reported / counted | output tokens reported / counted | calls reported / counted |")
        print("|---|---|---|---|")
        for who, (i, o, n, ci, co, cn) in totals.items():
            print(f"| {who} | {i} / {ci} | {o} / {co} | {n} / {cn} |")
        wrong = [who for who, (i, o, n, ci, co, cn) in totals.items() if (i, o, n) != (ci, co, cn)]
        if wrong:
            raise SystemExit(f"usage differs from the model server's counts for {', '.join(wrong)}")
        print(f"\n{args.turns} turns in {time.monotonic() - began:.0f} s: every total equals the model server's counts")


if __name__ == "__main__":
    main()
