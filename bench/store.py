"""Store figures (issue 45): a durable put, 10,000 puts (64 at a time), a full-text query and a
filter over 10,000 items, on SQLite (a fresh file, synced commits) and on PostgreSQL (a private
server, tests/support/postgres.py). Run: PYTHONPATH=.:src .venv/bin/python -m bench.store"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from tests.support.postgres import PostgresServer

from adapters.postgres.database import PostgresDatabase
from adapters.postgres.store import PostgresStore
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.store import SqliteStore
from domain.store import PutItem, SearchItems
from ports.store import StorePort

WORDS = "lighthouse keeper harbour tide storm lantern rock gull boat rope anchor sail wave cliff fog bell".split()
ITEMS = 10_000


async def median_ms(times: int, call: Callable[[], Awaitable[object]]) -> float:
    spent = []
    for _ in range(times):
        start = time.perf_counter()
        await call()
        spent.append(time.perf_counter() - start)
    return statistics.median(spent) * 1000


async def figures(name: str, store: StorePort) -> None:
    now = datetime.now(UTC)
    put = await median_ms(200, lambda: store.put("u1", PutItem(("memories",), "k", {"text": "warm"}), now))
    start = time.perf_counter()
    for first in range(0, ITEMS, 64):
        await asyncio.gather(
            *(
                store.put(
                    "u1",
                    PutItem(("docs", str(i % 10)), f"k{i}", {"text": " ".join(WORDS[(i * j) % 16] for j in range(1, 9))}),
                    now,
                )
                for i in range(first, min(ITEMS, first + 64))
            )
        )
    bulk = time.perf_counter() - start
    query = await median_ms(50, lambda: store.search("u1", SearchItems(("docs",), query="lighthouse storm"), now))
    scan = await median_ms(20, lambda: store.search("u1", SearchItems(("docs",), filter={"text": "none"}), now))
    print(
        f"{name}: a put {put:.2f} ms (median); {ITEMS} puts {bulk:.1f} s ({ITEMS / bulk:.0f}/s); "
        f"a query at {ITEMS} {query:.1f} ms; a filter at {ITEMS} {scan:.1f} ms"
    )


async def main() -> None:
    runs = await SqliteRunStore.open(tempfile.mkdtemp() + "/store.db")
    await figures("SQLite", SqliteStore(*runs.workers()))
    await runs.aclose()
    server = PostgresServer(durable=True).start()
    try:
        db = PostgresDatabase(server.url)
        await figures("PostgreSQL", PostgresStore(db))
        await db.close()
    finally:
        server.stop()


if __name__ == "__main__":
    asyncio.run(main())
