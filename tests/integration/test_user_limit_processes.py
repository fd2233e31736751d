"""USER_MAX_ACTIVE_RUNS across processes: two processes on one store, each starting a burst
of one user's runs at the same moment, never take the user past the limit (SQLite: the
file's one writer; PostgreSQL: a lock per user held to the insert's commit)."""

from __future__ import annotations

import asyncio
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from adapters.postgres.database import PostgresDatabase
from adapters.postgres.runs import PostgresRunStore
from adapters.sqlite.runs import SqliteRunStore
from domain.errors import UserLimitReached
from domain.model import Run, RunStatus, new_id, utc_now
from ports.runs import LoadCap

LIMIT = 3
PER_PROCESS = 10


def _open(where: str) -> Any:
    if where.startswith("postgresql://"):
        return PostgresRunStore(PostgresDatabase(where))
    return SqliteRunStore(where)


async def _burst(where: str, owner: str, cids: list[str], barrier: Any) -> int:
    store = _open(where)
    await store.owner_load(owner)  # connected and ready before the start line
    barrier.wait()

    async def start(cid: str) -> bool:
        try:
            await store.start_run(Run(new_id(), cid, RunStatus.RUNNING, utc_now()), utc_now(), cap=LoadCap(owner, LIMIT))
        except UserLimitReached:
            return False
        return True

    try:
        return sum(await asyncio.gather(*(start(cid) for cid in cids)))
    finally:
        await store.aclose()


def burst_process(where: str, owner: str, cids: list[str], barrier: Any, results: Any) -> None:
    results.put(asyncio.run(_burst(where, owner, cids, barrier)))


async def two_processes_burst(where: str) -> int:
    owner, cids = new_id(), [new_id() for _ in range(2 * PER_PROCESS)]
    store = _open(where)
    for cid in cids:
        await store.create_conversation(cid, "t", utc_now(), owner=owner)
    spawn = multiprocessing.get_context("spawn")
    barrier, results = spawn.Barrier(2), spawn.Queue()
    workers = [spawn.Process(target=burst_process, args=(where, owner, cids[i::2], barrier, results)) for i in range(2)]
    for w in workers:
        w.start()
    counts = [await asyncio.to_thread(results.get, True, 120) for _ in workers]
    for w in workers:
        w.join(30)
        assert w.exitcode == 0
    assert await store.owner_load(owner) == sum(counts)
    await store.aclose()
    return sum(counts)


@pytest.mark.timeout(180)
async def test_two_processes_on_one_sqlite_file_never_pass_the_limit(tmp_path: Path) -> None:
    path = str(tmp_path / "db" / "sophos.db")
    (await SqliteRunStore.open(path)).close()  # migrated before the processes race
    assert await two_processes_burst(path) == LIMIT


@pytest.mark.timeout(180)
async def test_two_processes_on_one_postgresql_database_never_pass_the_limit(pg_url: str) -> None:
    assert await two_processes_burst(pg_url) == LIMIT
