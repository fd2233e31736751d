"""What only the PostgreSQL adapters promise, on a real server: liveness by session lock
(a killed owner is seen dead at once, a paused one is never), the checkpoint write fenced
in its own transaction, and storage that stays linear."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from langgraph.checkpoint.base import empty_checkpoint

from adapters.langgraph.keys import RUN_KEY
from adapters.postgres.database import PostgresDatabase
from adapters.postgres.runs import PostgresRunStore
from adapters.postgres.saver import FencedPostgresSaver
from domain.errors import RunLost
from domain.model import Run, RunOwner, RunStatus, new_id, utc_now
from ports.runs import RunFinish
from tests.support.app import ROOT

# A process that owns a run on the database and then does nothing: killed or paused by the test.
OWNER_PROCESS = """
import asyncio, sys
from adapters.postgres.database import PostgresDatabase
from adapters.postgres.runs import PostgresRunStore
from domain.model import Run, RunOwner, RunStatus, utc_now

async def main(url, cid, run_id):
    owner = RunOwner("elsewhere", 1, 1.0, instance=run_id + "-owner")
    store = PostgresRunStore(PostgresDatabase(url), owner=owner)
    await store.ready()
    await store._presence.ready.wait()
    await store.start_run(Run(run_id, cid, RunStatus.RUNNING, utc_now(), owner=owner), utc_now())
    print("owning", flush=True)
    await asyncio.sleep(600)

asyncio.run(main(*sys.argv[1:]))
"""


@pytest.fixture
async def store(pg_url: str) -> AsyncIterator[PostgresRunStore]:
    store = PostgresRunStore(PostgresDatabase(pg_url), poll_interval=0.05)
    yield store
    await store.aclose()


async def expired(store: PostgresRunStore, run_id: str) -> bool:
    runs = {r.id: r for r in await store.running_runs(lease_seconds=0.001)}
    return runs[run_id].lease_expired


async def test_a_killed_owner_is_seen_dead_at_once_and_a_paused_one_never(pg_url: str, store: PostgresRunStore) -> None:
    cid, run_id = new_id(), new_id()
    await store.create_conversation(cid, "t", utc_now())
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER_PROCESS, pg_url, cid, run_id],
        cwd=ROOT,
        env={"PYTHONPATH": f"{ROOT}:{ROOT / 'src'}"},
        stdout=subprocess.PIPE,
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == b"owning"
        await asyncio.sleep(0.1)  # the 1 ms lease is long past: only the session lock keeps it
        assert not await expired(store, run_id)
        owner.send_signal(signal.SIGSTOP)
        await asyncio.sleep(1.5)
        assert not await expired(store, run_id)  # paused, but its session lives
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        killed = time.monotonic()
        while not await expired(store, run_id):
            assert time.monotonic() - killed < 5, "the dead owner's lock was never freed"
            await asyncio.sleep(0.01)
        print(f"\ndead owner seen {1000 * (time.monotonic() - killed):.0f} ms after kill -9")
        # the registry forgets a dead process once none of its runs is left running
        await store.prune(3600)
        assert await store._rows("SELECT count(*) FROM processes") == [(1,)]
        await store.finish_run(run_id, RunFinish(RunStatus.INTERRUPTED, utc_now()))
        await store.prune(3600)
        assert await store._rows("SELECT count(*) FROM processes") == [(0,)]
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()


def a_checkpoint(i: int, text: str) -> dict[str, Any]:
    checkpoint: dict[str, Any] = dict(empty_checkpoint())
    checkpoint["id"] = f"1ef{i:013d}"
    checkpoint["channel_values"] = {"messages": [text] * (i + 1)}
    checkpoint["channel_versions"] = {"messages": f"{i:032d}"}
    return checkpoint


async def put(saver: FencedPostgresSaver, thread: str, i: int, run_id: str | None = None) -> None:
    configurable: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if run_id:
        configurable[RUN_KEY] = run_id
    checkpoint = a_checkpoint(i, "x" * 1000)
    await saver.aput(
        {"configurable": configurable},
        checkpoint,
        {"source": "loop", "step": i},  # type: ignore[arg-type]
        {"messages": checkpoint["channel_versions"]["messages"]},
    )


async def test_a_checkpoint_of_a_run_that_is_no_longer_running_writes_nothing(pg_url: str, store: PostgresRunStore) -> None:
    saver = FencedPostgresSaver(store.db, keep=3)
    cid = new_id()
    await store.create_conversation(cid, "t", utc_now())
    owner = RunOwner("h", 1, 1.0, instance=new_id())
    run = Run(new_id(), cid, RunStatus.RUNNING, utc_now(), owner=owner)
    await store.start_run(run, utc_now())
    await put(saver, cid, 0, run.id)
    await store.finish_run(run.id, RunFinish(RunStatus.INTERRUPTED, utc_now()))  # taken over
    with pytest.raises(RunLost):
        await put(saver, cid, 1, run.id)
    with psycopg.connect(pg_url) as conn:
        for table in ("checkpoints", "checkpoint_log"):
            assert conn.execute(f"SELECT count(*) FROM {table} WHERE thread_id = %s", (cid,)).fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM checkpoint_blobs WHERE thread_id = %s", (cid,)).fetchone() == (1,)


async def test_storage_stays_linear_and_the_log_keeps_every_checkpoint(pg_url: str, store: PostgresRunStore) -> None:
    saver = FencedPostgresSaver(store.db, keep=3)
    thread = new_id()
    await store.ready()
    for i in range(40):
        await put(saver, thread, i)
    with psycopg.connect(pg_url) as conn:
        count = {
            t: conn.execute(f"SELECT count(*) FROM {t} WHERE thread_id = %s", (thread,)).fetchone()[0]  # type: ignore[index]
            for t in ("checkpoints", "checkpoint_blobs", "checkpoint_log")
        }
    assert count == {"checkpoints": 3, "checkpoint_blobs": 3, "checkpoint_log": 40}
    latest = await saver.aget_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
    assert latest is not None and len(latest.checkpoint["channel_values"]["messages"]) == 40
    assert len(await saver.history(thread)) == 40


async def test_a_slow_query_does_not_hold_up_the_savers_other_queries(store: PostgresRunStore) -> None:
    saver = FencedPostgresSaver(store.db)
    await store.ready()
    config: Any = {"configurable": {"thread_id": new_id(), "checkpoint_ns": ""}}
    async with saver._cursor() as cur:  # a query in progress (the official saver locks here)
        await cur.execute("SELECT pg_sleep(0.2)")
        assert await asyncio.wait_for(saver.aget_tuple(config), 5) is None


async def put_messages(saver: FencedPostgresSaver, thread: str, i: int, messages: list[Any]) -> None:
    checkpoint: dict[str, Any] = dict(empty_checkpoint())
    checkpoint["id"] = f"1ef{i:013d}"
    checkpoint["channel_values"] = {"messages": messages}
    checkpoint["channel_versions"] = {"messages": f"{i:032d}"}
    await saver.aput(
        {"configurable": {"thread_id": thread, "checkpoint_ns": ""}},
        checkpoint,  # type: ignore[arg-type]
        {"source": "loop", "step": i},
        {"messages": checkpoint["channel_versions"]["messages"]},
    )


async def test_each_message_is_stored_once_and_a_checkpoint_does_not_grow_with_its_thread(
    pg_url: str, store: PostgresRunStore
) -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    saver = FencedPostgresSaver(store.db, keep=3)
    thread = new_id()
    await store.ready()
    messages: list[Any] = []
    for i in range(60):  # a growing thread, each checkpoint holding the same objects and one more
        messages = [*messages, (HumanMessage if i % 2 == 0 else AIMessage)(f"{i} " + "y" * 1000, id=f"m{i}")]
        await put_messages(saver, thread, i, messages)
    edited = [*messages[:-2], HumanMessage("edited", id="edited")]  # an edit drops the last two
    for i in range(60, 64):  # the checkpoints that held them are pruned: their rows go too
        await put_messages(saver, thread, i, edited)

    def stored() -> tuple[int, int, int]:
        with psycopg.connect(pg_url) as conn:
            rows = conn.execute(
                "SELECT count(*), coalesce(sum(length(message)), 0) FROM checkpoint_messages WHERE thread_id = %s", (thread,)
            ).fetchone()
            blob = conn.execute(
                "SELECT max(length(blob)) FROM checkpoint_blobs WHERE thread_id = %s AND channel = 'messages'", (thread,)
            ).fetchone()
        assert rows is not None and blob is not None
        return int(rows[0]), int(rows[1]), int(blob[0])

    count, size, largest_blob = stored()
    assert count == len(edited)  # once each, the dropped ones collected
    assert 59 * 1000 < size < 59 * 1300
    assert largest_blob < 64  # runs of numbers, not a digest per message
    fresh = FencedPostgresSaver(store.db, keep=3)  # another process: nothing in memory
    latest = await fresh.aget_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
    assert latest is not None
    assert [(m.id, m.content) for m in latest.checkpoint["channel_values"]["messages"]] == [(m.id, m.content) for m in edited]
    await put_messages(fresh, thread, 64, [*latest.checkpoint["channel_values"]["messages"], AIMessage("more", id="more")])
    assert stored()[0] == len(edited) + 1
    fields = await saver.message_fields(thread, f"1ef{64:013d}")
    assert fields is not None and [f["id"] for f in fields] == [*(m.id for m in edited), "more"]
