"""Search figures on PostgreSQL (printed by the postgres section): query time over many
conversations through the app, and what indexing adds to a turn (the index write, timed
inside the fenced saver's transactions of real turns)."""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg
from tests.support.app import app_env
from tests.support.harness import make_harness, spec
from tests.support.long_thread import note, turn_replies
from tests.support.postgres import create_database, drop_database

from bench.search import MESSAGES, corpus, timed_queries
from bench.search import query_time as sqlite_query_time
from bench.table import Row, print_table

BATCH = 500  # conversations per transaction while seeding


async def migrate(url: str) -> None:
    from adapters.postgres.database import PostgresDatabase
    from adapters.postgres.saver import FencedPostgresSaver

    db = PostgresDatabase(url)
    FencedPostgresSaver(db)  # its tables are part of the migration
    await db.pool()
    await db.close()


def fill(url: str, conversations: int) -> list[str]:
    """The same conversations as the SQLite figure, each entry's row made by the index's
    own `entry` (its words split as the checkpointer splits them)."""
    from adapters.postgres.search import ENTRY, entry

    words, items = corpus(conversations)
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        convs: list[tuple[str, str]] = []
        rows: list[tuple[object, ...]] = []
        threads: list[tuple[str, int]] = []
        for i, (title, texts) in enumerate(items):
            cid = str(uuid.uuid4())
            convs.append((cid, title))
            rows.append(entry(cid, None, "title", title))
            rows += [entry(cid, j, "user" if j % 2 == 0 else "assistant", t) for j, t in enumerate(texts)]
            threads.append((cid, len(texts)))
            if i % BATCH == BATCH - 1 or i == conversations - 1:
                cur.executemany(
                    "INSERT INTO conversations (id, title, created_at, updated_at) VALUES (%s, %s, now(), now())", convs
                )
                cur.executemany(ENTRY, rows)
                cur.executemany("INSERT INTO search_threads VALUES (%s, %s, %s, NULL)", [(c, n, n) for c, n in threads])
                conn.commit()
                convs, rows, threads = [], [], []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")  # as autovacuum would have by now
    return words


async def query_time(server: str, tmp: Path, conversations: int) -> list[Row]:
    url = create_database(server)
    try:
        await migrate(url)
        t = time.perf_counter()
        words = fill(url, conversations)
        seeded = time.perf_counter() - t
        env = app_env(tmp, TOOLS_BACKEND="none", MODEL_BACKEND="demo", DATABASE_URL=url)
        label = f"GET /api/search on PostgreSQL, {conversations} conversations x {MESSAGES} messages"
        return await timed_queries(env, words, label, f" (seeded in {seeded:.0f} s)")
    finally:
        drop_database(url)


async def indexing_cost(server: str, turns: int) -> Row:
    """Run `turns` real turns (a tool call and an answer each) on PostgreSQL and time the
    index writes inside each checkpoint's and each pending input's transaction against the
    whole turn."""
    import adapters.postgres.saver as saver_module
    from adapters.postgres.database import PostgresDatabase
    from adapters.postgres.runs import PostgresRunStore
    from adapters.postgres.saver import FencedPostgresSaver

    spent = [0.0]
    written = [0]
    original: Callable[..., Awaitable[None]] = saver_module.index_checkpoint
    original_input: Callable[..., Awaitable[None]] = saver_module.index_input

    def timing(write: Callable[..., Awaitable[None]], checkpoint: bool) -> Callable[..., Awaitable[None]]:
        async def timed(*args: Any) -> None:
            t = time.perf_counter()
            await write(*args)
            spent[0] += time.perf_counter() - t
            written[0] += checkpoint

        return timed

    url = create_database(server)
    saver_module.index_checkpoint = timing(original, True)  # type: ignore[assignment]
    saver_module.index_input = timing(original_input, False)  # type: ignore[assignment]
    try:
        db = PostgresDatabase(url)
        saver = FencedPostgresSaver(db, keep=3)
        store = PostgresRunStore(db)
        await store.ready()
        h = make_harness(turn_replies(turns), tools=[(spec("notes__save"), note)], repo=store, saver=saver)
        cid = None
        t0 = time.perf_counter()
        for i in range(1, turns + 1):
            started, _ = await h.send(f"{i} question about puffins", cid)
            cid = started.conversation_id
        total = time.perf_counter() - t0
        await store.aclose()
    finally:
        saver_module.index_checkpoint = original  # type: ignore[assignment]
        saver_module.index_input = original_input  # type: ignore[assignment]
        drop_database(url)
    share = spent[0] / (total - spent[0])
    return (
        f"search indexing per turn on PostgreSQL ({turns} turns, {written[0] / turns:.1f} checkpoints each)",
        "-",
        f"{spent[0] * 1000 / turns:.2f} ms of {total * 1000 / turns:.1f} ms = +{share:.1%}",
        "<= 10%",
        share <= 0.10,
    )


async def rows(server: str, tmp: Path, conversations: int, turns: int) -> list[Row]:
    return [*await query_time(server, tmp, conversations), await indexing_cost(server, min(turns, 100))]


async def section(args: argparse.Namespace) -> None:
    """`--only search`: the query figures on SQLite, then on PostgreSQL (a private server)."""
    from tests.support.postgres import postgres_server

    tmp = Path(tempfile.mkdtemp(prefix="sophos-bench-search-"))
    try:
        found = await sqlite_query_time(tmp, args.conversations)
        with postgres_server(durable=True) as server:
            found += await query_time(server, tmp, args.conversations)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print_table(("figure", "baseline", "sophos", "target"), found)
