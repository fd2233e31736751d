"""Run every benchmark and print their tables: baseline (plain LangGraph + SqliteSaver, same run)
against Sophos; both backends side by side with the bare official PostgreSQL saver
(bench/postgres.py); concurrency through a real server, a baseline git ref against this tree
(bench/concurrency.py); side by side with the LangGraph Agent Server and bare LangGraph
(bench/peers.py); a 200-turn thread and RSS after 1,000 conversations (bench/endurance.py);
streaming on the page at 500 messages against an empty chat, in Chromium (bench/page_stream.py);
start-up of `sophos --help`, a read command and `sophos serve`, a baseline git ref against this tree
(bench/startup.py).
Branches: a 300-turn conversation with 20 branches against the same without (bench/branches.py,
in core; alone with --only branches). Imports: a conversation at the import limits (20,000
messages, 200 branches) against a plain chain of as many messages (bench/imports.py).
LangGraph's own integration suite against `langgraph dev` and `sophos serve`
(bench/graph_suite.py; only with --only graph-suite, `make bench-graph-suite`). The soak of
hostile PDFs and imports beside normal chats (bench/hostile.py) only with --only hostile.
Each section's tables are printed and also written to bench/results/<start, UTC>-<section>.md
(bench/results/README.md); --results DIR writes them elsewhere.
Search: typical queries and every query sent while typing, at 10,000 conversations of 20 messages,
on SQLite and PostgreSQL (bench/search.py; in core and postgres; alone with --only search).
Retrieval: recall@10 and nDCG@10 of hybrid, BM25 and embedding retrieval on a frozen set built
from CPython's pydoc_data topics, and the store's times at 10,000 chunks (bench/retrieval.py;
needs the bench extra, requirements-bench.lock).
Usage: python -m bench [--only core|branches|search|imports|postgres|concurrency|endurance|peers|peers-hosted|page|graph-suite|startup|hostile|retrieval]
[--turns 300]
[--conversations 10000] [--baseline-ref REF] [--reps 3] [--results DIR]"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from tests.support.app import SOPHOS, app_env, ledger_server_entry, process_env
from tests.support.long_thread import TEXT, file_size, long_thread_harness

from bench import (
    baseline,
    branches,
    concurrency,
    endurance,
    graph_suite,
    hostile,
    imports,
    page_stream,
    peers,
    peers_hosted,
    postgres,
    retrieval,
    search,
    search_postgres,
    startup,
)
from bench.context import prompt_building
from bench.table import RESULTS, Row, print_table, recording


def median_ms(fn: Callable[[], Any], n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


async def amedian_ms(fn: Callable[[], Any], n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


async def long_thread(tmp: Path, turns: int) -> tuple[list[Row], Path, str]:
    # baseline
    base_db = tmp / "baseline.db"
    graph, saver = baseline.build(str(base_db))
    thread = str(uuid.uuid4())
    base_sizes: dict[int, int] = {}
    t0 = time.perf_counter()
    base_pause = 0.0
    for i in range(1, turns + 1):
        baseline.turn(graph, thread, i)
        if i in (10, 20, turns - 10, turns):
            p = time.perf_counter()
            base_sizes[i] = file_size(base_db)
            base_pause += time.perf_counter() - p
    base_turn = (time.perf_counter() - t0 - base_pause) * 1000 / turns
    # Sophos, through the use case
    db = tmp / "sophos.db"
    h, sophos_saver, repo = long_thread_harness(db, turns)
    sizes: dict[int, int] = {}
    cid = None
    t0 = time.perf_counter()
    pause = 0.0
    for i in range(1, turns + 1):
        started, _ = await h.send(f"{i} {TEXT}", cid)
        cid = started.conversation_id
        if i in (10, 20, turns - 10, turns):
            p = time.perf_counter()
            sizes[i] = file_size(db)
            pause += time.perf_counter() - p
    our_turn = (time.perf_counter() - t0 - pause) * 1000 / turns
    assert cid is not None
    sophos_saver.close()
    repo.close()

    def growth(s: dict[int, int]) -> tuple[int, int]:
        # bytes per turn, averaged over ten turns: one turn adds less than two pages here
        return (s[20] - s[10]) // 10, (s[turns] - s[turns - 10]) // 10

    b10, b300 = growth(base_sizes)
    o10, o300 = growth(sizes)
    ratio_base = b300 / max(b10, 1)
    ratio = o300 / max(o10, 1)
    # JSONL export: the baseline reads the whole history; Sophos reads its checkpoint log
    t = time.perf_counter()
    history = list(graph.get_state_history({"configurable": {"thread_id": thread}}))
    base_export = (time.perf_counter() - t) * 1000
    saver.conn.close()
    rows: list[Row] = [
        (f"database size after {turns} turns", mb(base_sizes[turns]), mb(sizes[turns]), "<= 5 MB", sizes[turns] <= 5e6),
        (
            f"bytes per turn near turn {turns} / near turn 10",
            f"{b300} / {b10} = {ratio_base:.1f}x",
            f"{o300} / {o10} = {ratio:.2f}x",
            "<= 1.5x",
            ratio <= 1.5,
        ),
        (
            "time per turn (fake model, sync)",
            f"{base_turn:.1f} ms",
            f"{our_turn:.1f} ms = {our_turn / base_turn:.2f}x",
            "<= 1.3x",
            our_turn / base_turn <= 1.3,
        ),
    ]
    return rows + [("__export__", f"{base_export:.0f} ms ({len(history)} checkpoints)", "", "", True)], db, cid


async def http_reads(db: Path, cid: str, tmp: Path) -> list[Row]:
    from entrypoints.container import close_container, create_container
    from entrypoints.http.app import create_app

    container = create_container(app_env(tmp, TOOLS_BACKEND="none", MODEL_BACKEND="demo", DATABASE_PATH=str(db)))
    app = create_app(container, manage_lifecycle=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:

        async def detail() -> None:
            r = await client.get(f"/api/conversations/{cid}")
            assert r.status_code == 200 and len(r.json()["messages"]) > 0

        async def export() -> None:
            r = await client.get(f"/api/conversations/{cid}/export", params={"format": "jsonl"})
            assert r.status_code == 200

        async def cold_detail() -> None:
            container.threads()._cache.clear()  # as after a restart, or for a thread just changed
            await detail()

        await detail()
        warm_ms = await amedian_ms(detail, 20)
        detail_ms = await amedian_ms(cold_detail, 10)
        export_ms = await amedian_ms(export, 5)
    await close_container(container)
    return [
        (
            "GET /api/conversations/ID (long thread)",
            "(get_state alone 10.5 ms at 300 turns)",
            f"{detail_ms:.1f} ms uncached, {warm_ms:.1f} ms cached",
            "<= 30 ms",
            detail_ms <= 30,
        ),
        ("JSONL export of the long thread", "{export}", f"{export_ms:.1f} ms", "<= 1000 ms", export_ms <= 1000),
    ]


async def listing(tmp: Path, n: int) -> list[Row]:
    from adapters.sqlite.runs import SqliteRunStore
    from entrypoints.container import close_container, create_container
    from entrypoints.http.app import create_app

    db = tmp / "many.db"
    repo = SqliteRunStore(str(db))
    repo.close()
    conn = sqlite3.connect(db)
    with conn:
        conn.executemany(
            "INSERT INTO conversations (id, title, created_at, updated_at, message_count) VALUES (?, ?, ?, ?, 4)",
            [
                (
                    str(uuid.uuid4()),
                    f"conversation {i}",
                    f"2026-01-01T00:00:{i % 60:02d}.{i % 1000:03d}Z",
                    f"2026-{1 + i % 12:02d}-01T00:00:00.{i % 1000:03d}Z",
                )
                for i in range(n)
            ],
        )
        conn.executemany(
            "INSERT INTO runs (id, conversation_id, status, started_at) SELECT ?, id, 'completed', updated_at FROM conversations WHERE rowid = ?",
            [(str(uuid.uuid4()), i + 1) for i in range(n)],
        )
    conn.close()
    container = create_container(app_env(tmp, TOOLS_BACKEND="none", MODEL_BACKEND="demo", DATABASE_PATH=str(db)))
    app = create_app(container, manage_lifecycle=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:

        async def page() -> None:
            r = await client.get("/api/conversations", params={"limit": 50})
            assert len(r.json()["conversations"]) == 50

        await page()
        ms = await amedian_ms(page, 30)
    await close_container(container)
    cold = median_ms(
        lambda: subprocess.run(
            [SOPHOS, "conversations"], env=process_env({"DATABASE_PATH": str(db)}), stdout=subprocess.DEVNULL, check=True
        ),
        5,
    )
    return [
        (f"GET /api/conversations, {n} conversations, first 50", "-", f"{ms:.1f} ms", "<= 20 ms", ms <= 20),
        (f"`sophos conversations` cold start ({n} rows)", "-", f"{cold:.0f} ms", "<= 500 ms", cold <= 500),
    ]


async def mcp_calls(tmp: Path) -> list[Row]:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    from adapters.mcp.toolbox import McpToolbox

    entry = ledger_server_entry(tmp / "ledger.jsonl")
    (tmp / "mcpcfg").mkdir(exist_ok=True)
    (tmp / "mcpcfg" / "mcp.json").write_text(json.dumps({"ledger": entry}))
    box = McpToolbox(tmp / "mcpcfg", tmp / "memory.jsonl")
    await box.call("ledger__whoami", {}, "warm-up")
    warm = await amedian_ms(lambda: box.call("ledger__whoami", {}, "k"), 50)
    await box.aclose()
    client = MultiServerMCPClient({"ledger": {"transport": "stdio", **entry}})
    tools = {t.name: t for t in await client.get_tools()}
    cold = await amedian_ms(lambda: tools["whoami"].ainvoke({}), 5)
    return [
        ("trivial MCP tool call", f"{cold:.0f} ms (process per call)", f"{warm:.1f} ms (warm session)", "<= 20 ms", warm <= 20)
    ]


async def core(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="sophos-bench-"))
    try:
        rows, db, cid = await long_thread(tmp, args.turns)
        export = rows.pop()[1]
        rows += [(a, b.replace("{export}", export), c, d, e) for a, b, c, d, e in await http_reads(db, cid, tmp)]
        rows += await listing(tmp, args.conversations)
        rows += await mcp_calls(tmp)
        rows += prompt_building(args.turns)
        rows += await search.rows(tmp, args.conversations, args.turns)
        rows += await branches.section(tmp, args.turns)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print_table(("figure", "baseline (LangGraph + SqliteSaver)", "sophos", "target"), rows)


def run_facts(argv: Sequence[str]) -> dict[str, str]:
    """What a results file needs to be read later: the command, the machine, the source."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, check=True)
        except (OSError, subprocess.SubprocessError):
            return ""
        return done.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = " (with uncommitted changes)" if git("status", "--porcelain", "--untracked-files=no") else ""
    return {
        "command": "`python -m bench" + "".join(f" {a}" for a in argv) + "`",
        "machine": f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, {sys.platform}, "
        f"load average {os.getloadavg()[1]:.1f} at the start (5 min: other work on the machine)",
        "source": f"git {commit}{dirty}",
    }


async def branches_only(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="sophos-bench-"))
    try:
        rows = await branches.section(tmp, args.turns)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print_table(("figure", "baseline (LangGraph + SqliteSaver)", "sophos", "target"), rows)


async def imports_section(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="sophos-bench-"))
    try:
        rows = await imports.section(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print_table(("figure", "baseline (one chain of as many messages)", "sophos", "target"), rows)


async def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--only",
        choices=(
            "core",
            "branches",
            "search",
            "imports",
            "postgres",
            "concurrency",
            "endurance",
            "peers",
            "peers-hosted",
            "page",
            "graph-suite",
            "startup",
            "hostile",
            "retrieval",
        ),
        help="run one section of the benchmarks",
    )
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--results", type=Path, default=RESULTS, help="where the dated results files go")
    concurrency.add_arguments(parser)
    endurance.add_arguments(parser)
    peers.add_arguments(parser)
    page_stream.add_arguments(parser)
    graph_suite.add_arguments(parser)
    startup.add_arguments(parser)
    hostile.add_arguments(parser)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    started = datetime.now(UTC)
    facts = run_facts(argv)
    print(f"running on {os.cpu_count()} cores, python {sys.version.split()[0]} ...", flush=True)
    sections = {
        "core": core,
        "branches": branches_only,
        "search": search_postgres.section,
        "imports": imports_section,
        "postgres": postgres.section,
        "concurrency": concurrency.section,
        "endurance": endurance.section,
        "peers": peers.section,
        "peers-hosted": peers_hosted.section,
        "page": page_stream.section,
        "graph-suite": graph_suite.section,
        "startup": startup.section,
        "hostile": hostile.section,
        "retrieval": retrieval.section,
    }
    # branches and search are part of core (search on PostgreSQL: of postgres); alone only when asked for. The graph suite (two runs of a
    # 55-test suite, minutes) needs the dev tools' pytest: its own target, bench-graph-suite.
    # The soak (hostile) is minutes of load beside a server: only alone
    alone = ("branches", "search", "graph-suite", "hostile")
    chosen = [args.only] if args.only else [name for name in sections if name not in alone]
    for i, name in enumerate(chosen):
        if i:
            print()
        with recording(name, started, facts, args.results):
            await sections[name](args)


if __name__ == "__main__":
    asyncio.run(main())
