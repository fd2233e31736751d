"""Storage and turn time over a long conversation, side by side: the bare official
AsyncPostgresSaver (plain LangGraph, the baseline graph), Sophos on PostgreSQL, Sophos on
SQLite. A private PostgreSQL server is started with fsync on (or TEST_DATABASE_URL used)."""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import psycopg
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool
from tests.support.harness import make_harness, spec
from tests.support.long_thread import TEXT, file_size, long_thread_harness, note, turn_replies
from tests.support.postgres import create_database, drop_database, postgres_server

from adapters.postgres.database import PostgresDatabase
from adapters.postgres.runs import PostgresRunStore
from adapters.postgres.saver import FencedPostgresSaver
from bench import baseline, postgres_api, search_postgres
from bench.table import Row, print_table

Sizes = dict[int, int]


def pg_size(url: str) -> int:
    """Bytes on disk of every table of ours and the saver's, indexes and TOAST included."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_stat_user_tables").fetchone()
    return int(row[0]) if row else 0


def pg_vacuum(url: str) -> None:
    """A plain VACUUM, as autovacuum does: the space of deleted rows becomes reusable."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM")


def live_bytes(url: str) -> int:
    """Bytes of the rows themselves (as stored: compressed, TOAST included), no free space."""
    total = 0
    with psycopg.connect(url) as conn:
        tables = [r[0] for r in conn.execute("SELECT relname FROM pg_stat_user_tables")]
        for table in tables:
            row = conn.execute(f"SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {table} t").fetchone()
            total += int(row[0]) if row else 0
    return total


async def drive(
    turns: int, turn: Callable[[int], Awaitable[None]], size: Callable[[], int], vacuum: Callable[[], object] = int
) -> tuple[Sizes, float]:
    """Run `turns` turns; sizes at turns 10, 20, turns-10, turns; mean ms per turn. `vacuum`
    runs every 10 turns, untimed (autovacuum with a short nap, in the background)."""
    sizes: Sizes = {}
    paused = 0.0
    started = time.perf_counter()
    for i in range(1, turns + 1):
        await turn(i)
        p = time.perf_counter()
        if i % 10 == 0:
            vacuum()
        if i in (10, 20, turns - 10, turns):
            sizes[i] = size()
        paused += time.perf_counter() - p
    return sizes, (time.perf_counter() - started - paused) * 1000 / turns


# data bytes at turns 10, 20, turns-10, turns; mean ms per turn; mean of the last 10; on disk at the end
Result = tuple[Sizes, float, float, int]


async def official(url: str, turns: int) -> Result:
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(url, kwargs=kwargs, open=False) as pool:
        saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
        await saver.setup()
        graph = baseline.graph(saver)
        thread = str(uuid.uuid4())
        last: list[float] = []

        async def turn(i: int) -> None:
            t = time.perf_counter()
            config = {"configurable": {"thread_id": thread}}
            await graph.ainvoke({"messages": [HumanMessage(f"{i} {TEXT}")]}, config, durability="sync")
            if i > turns - 10:
                last.append((time.perf_counter() - t) * 1000)

        sizes, per_turn = await drive(turns, turn, lambda: live_bytes(url), lambda: pg_vacuum(url))
    return sizes, per_turn, sum(last) / len(last), pg_size(url)


async def sophos_on(
    turns: int, open_harness: Callable[[], tuple[object, Callable[[], int]]], vacuum: Callable[[], object] = int
) -> tuple[Sizes, float, float]:
    """Sizes, mean ms per turn and mean of the last 10 turns, through the real use case."""
    h, size = open_harness()
    cid: list[str | None] = [None]
    last: list[float] = []

    async def turn(i: int) -> None:
        t = time.perf_counter()
        started, _ = await h.send(f"{i} {TEXT}", cid[0])  # type: ignore[attr-defined]
        cid[0] = started.conversation_id
        if i > turns - 10:
            last.append((time.perf_counter() - t) * 1000)

    sizes, per_turn = await drive(turns, turn, size, vacuum)
    return sizes, per_turn, sum(last) / len(last)


def mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def growth(s: Sizes, turns: int) -> str:
    early, late = (s[20] - s[10]) // 10, (s[turns] - s[turns - 10]) // 10
    return f"{late} / {early} B"


async def section(args: argparse.Namespace) -> None:
    turns = args.turns
    tmp = Path(tempfile.mkdtemp(prefix="sophos-bench-pg-"))
    with postgres_server(durable=True) as server:
        base_url, ours_url = create_database(server), create_database(server)
        try:
            base = await official(base_url, turns)
            db = PostgresDatabase(ours_url)
            saver = FencedPostgresSaver(db, keep=3)
            store = PostgresRunStore(db)
            await store.ready()
            h = make_harness(turn_replies(turns), tools=[(spec("notes__save"), note)], repo=store, saver=saver)
            pg = (
                *await sophos_on(turns, lambda: (h, lambda: live_bytes(ours_url)), lambda: pg_vacuum(ours_url)),
                pg_size(ours_url),
            )
            await store.aclose()
        finally:
            drop_database(base_url)
            drop_database(ours_url)
        searching = await search_postgres.rows(server, tmp, args.conversations, turns)
        through_api = postgres_api.rows(server)
    sq_h, sq_saver, sq_repo = long_thread_harness(tmp / "sophos.db", turns)
    sq_sizes, sq_mean, sq_last = await sophos_on(turns, lambda: (sq_h, lambda: file_size(tmp / "sophos.db")))
    sq = (sq_sizes, sq_mean, sq_last, sq_sizes[turns])
    sq_saver.close()
    sq_repo.close()
    results: dict[str, Result] = {"official": base, "pg": pg, "sqlite": sq}
    rows: list[Row] = [
        (
            f"data after {turns} turns (PostgreSQL: live rows; SQLite: the file)",
            *(mb(r[0][turns]) for r in results.values()),
            True,
        ),
        (f"on disk after {turns} turns (PostgreSQL: VACUUM every 10 turns)", *(mb(r[3]) for r in results.values()), True),
        (f"data growth per turn near turn {turns} / near turn 10", *(growth(r[0], turns) for r in results.values()), True),
        ("time per turn, mean", *(f"{r[1]:.1f} ms" for r in results.values()), True),
        (f"time per turn, last 10 of {turns}", *(f"{r[2]:.1f} ms" for r in results.values()), True),
    ]
    print_table(("figure", "official AsyncPostgresSaver", "sophos PostgreSQL", "sophos SQLite"), rows, met=False)
    print()
    print_table(("figure", "baseline", "sophos PostgreSQL", "target"), searching)
    print()
    print_table(("figure (through the API, 1 KB turns)", "checkpoint tables", "whole database", "target"), through_api)
