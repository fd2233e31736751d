"""What only the SQLite run store has: the file's schema and its upgrade, a loop that never
waits on the file, storage faults as StorageFailure, and several stores (processes) on
one file."""

from __future__ import annotations

import asyncio
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from adapters.sqlite.database import (
    BUSY_MESSAGE,
    MIGRATION_1,
    MIGRATION_2,
    MIGRATION_3,
    MIGRATION_APPROVALS,
    MIGRATIONS,
    WRITE_MESSAGE,
)
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.schedule_schema import add_crons
from domain.errors import RunLost, SessionInProgress, StorageFailure
from domain.events import StreamEvent
from domain.model import Run, RunError, RunOwner, RunStatus, RunTrigger, iso, new_id, utc_now
from domain.schedules import Schedule, Timing
from ports.runs import RunFinish
from tests.contracts.run_stores import OWNER, RealClock, a_running_run, other_owner


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "db" / "sophos.db"


@pytest.fixture
async def store(db: Path) -> AsyncIterator[SqliteRunStore]:
    store = await SqliteRunStore.open(str(db), busy_timeout=0.5, poll_interval=0.01)
    yield store
    await store.aclose()


def raw(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(db, isolation_level=None)


# --- the schema --------------------------------------------------------------------------


def write_v3_file(db: Path) -> dict[str, str]:
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = raw(db)
    conn.executescript(MIGRATION_1 + MIGRATION_2 + MIGRATION_3 + "PRAGMA user_version = 3;")
    ids = {"conv": new_id(), "done": new_id(), "running": new_id()}
    conn.execute(
        "INSERT INTO conversations VALUES (?, 'old', '2026-01-01T10:00:00.000Z', '2026-01-01T10:05:00.000Z', 4)",
        (ids["conv"],),
    )
    conn.execute(
        "INSERT INTO runs (id, conversation_id, status, started_at, finished_at, owner_host, owner_pid, "
        "owner_started, heartbeat_at) VALUES (?, ?, 'completed', '2026-01-01T10:00:00.000Z', "
        "'2026-01-01T10:05:00.000Z', 'h', 7, 1.5, '2026-01-01T10:04:00.000Z')",
        (ids["done"], ids["conv"]),
    )
    conn.execute(
        "INSERT INTO runs (id, conversation_id, status, started_at, owner_host, owner_pid, owner_started, "
        "heartbeat_at) VALUES (?, ?, 'running', '2026-01-01T11:00:00.000Z', 'h', 8, 2.5, '2026-01-01T11:00:00.000Z')",
        (ids["running"], ids["conv"]),
    )
    conn.execute(
        "INSERT INTO tool_calls (key, conversation_id, run_id, tool, unsafe, attempts, started_at) "
        "VALUES ('k', ?, ?, 'bank__pay', 1, 2, '2026-01-01T10:01:00.000Z')",
        (ids["conv"], ids["done"]),
    )
    conn.close()
    return ids


async def test_a_version_3_file_upgrades_with_its_rows_intact(db: Path) -> None:
    ids = write_v3_file(db)
    store = await SqliteRunStore.open(str(db))
    try:
        assert store.schema_version == len(MIGRATIONS)
        conv = await store.get_conversation(ids["conv"])
        assert conv is not None and (conv.title, conv.message_count, conv.status) == (
            "old",
            4,
            RunStatus.RUNNING,
        )
        done = await store.get_run(ids["done"])
        assert done is not None and done.status is RunStatus.COMPLETED
        assert done.owner == RunOwner("h", 7, 1.5) and (done.base_count, done.trigger) == (0, RunTrigger.USER)
        assert iso(done.finished_at) == "2026-01-01T10:05:00.000Z"  # type: ignore[arg-type]
        running = await store.running_runs(lease_seconds=60)
        assert [(r.id, r.lease_expired) for r in running] == [(ids["running"], True)]  # beat long ago
        assert (await store.entries(["k"]))["k"].attempts == 2
        await store.append({ids["running"]: [(1, StreamEvent("token", "x"))]})
        assert len(await store.read(ids["running"], 0)) == 1
    finally:
        await store.aclose()
    conn = raw(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 2


async def test_a_file_from_before_approvals_upgrades_to_the_waiting_status_keeping_its_runs_and_events(db: Path) -> None:
    ids = write_v3_file(db)
    before_approvals = MIGRATIONS.index(MIGRATION_APPROVALS)
    conn = raw(db)
    conn.executescript(";".join(MIGRATIONS[3:before_approvals]) + f";PRAGMA user_version = {before_approvals};")
    conn.execute("INSERT INTO run_events VALUES (?, 1, 'token', '\"hi\"')", (ids["running"],))
    with pytest.raises(sqlite3.IntegrityError):  # the old CHECK knows no `waiting`
        conn.execute("UPDATE runs SET status = 'waiting' WHERE id = ?", (ids["done"],))
    before = conn.execute("SELECT rowid, * FROM runs ORDER BY rowid").fetchall()
    conn.close()
    store = await SqliteRunStore.open(str(db))
    try:
        assert store.schema_version == len(MIGRATIONS)
        events = await store.read(ids["running"], 0)
        assert [(e.event, e.data) for _, e in events] == [("token", "hi")]
        finish = RunFinish(RunStatus.WAITING, utc_now(), None, 2, StreamEvent("end", {"status": "waiting"}))
        assert await store.finish_run(ids["running"], finish)  # the writer sees the new CHECK at once
        assert (await store.get_conversation(ids["conv"])).status is RunStatus.WAITING  # type: ignore[union-attr]
    finally:
        await store.aclose()
    conn = raw(db)
    assert conn.execute("SELECT rowid, * FROM runs WHERE id = ?", (ids["done"],)).fetchall() == [before[0]]
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("UPDATE runs SET status = 'bogus' WHERE id = ?", (ids["done"],))
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


async def test_the_schema_has_run_events_without_rowid_and_the_new_run_columns(store: SqliteRunStore, db: Path) -> None:
    conn = raw(db)
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'run_events'").fetchone()[0]
    assert "WITHOUT ROWID" in sql
    assert [r[1] for r in conn.execute("PRAGMA table_info(run_events)")] == ["run_id", "seq", "event", "data"]
    columns = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    assert {"owner_instance", "owner_ns", "base_count", "trigger", "cancel_requested_at"} <= columns
    assert {r[1] for r in conn.execute("PRAGMA index_list(runs)")} >= {
        "runs_by_conversation",
        "runs_one_running",
    }


async def test_a_second_open_does_not_migrate_again(store: SqliteRunStore, db: Path) -> None:
    again = SqliteRunStore(str(db))
    assert again.schema_version == len(MIGRATIONS)
    again.close()


async def test_the_heartbeat_is_the_stores_clock_in_iso_form_and_round_trips(store: SqliteRunStore, db: Path) -> None:
    run = await a_running_run(store, RealClock())
    stored = raw(db).execute("SELECT heartbeat_at FROM runs WHERE id = ?", (run.id,)).fetchone()[0]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stored)
    assert run.heartbeat_at is not None and iso(run.heartbeat_at) == stored
    assert abs((run.heartbeat_at - utc_now()).total_seconds()) < 5


async def test_deleting_a_conversation_deletes_its_run_events_in_the_file(store: SqliteRunStore, db: Path) -> None:
    run = await a_running_run(store, RealClock())
    await store.append({run.id: [(1, StreamEvent("token", "a")), (2, StreamEvent("token", "b"))]})
    await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, utc_now(), event=StreamEvent("end", {})))
    assert raw(db).execute("SELECT count(*) FROM run_events").fetchone()[0] == 2  # the two tokens share a row
    assert await store.delete_conversation(run.conversation_id)
    assert raw(db).execute("SELECT count(*) FROM run_events").fetchone()[0] == 0


# --- the loop never waits on the file ----------------------------------------------------


# The longest gap a free loop may show. A loop that waited on the file would stall for the
# whole busy wait (0.4 s or more in these tests); 0.1 s failed on 2 cores under parallel load.
FREE = 0.3


async def max_gap(stop: asyncio.Event) -> float:
    """The longest the loop went without running this task, while it ticks every 10 ms."""
    loop = asyncio.get_running_loop()
    last, worst = loop.time(), 0.0
    while not stop.is_set():
        await asyncio.sleep(0.01)
        now = loop.time()
        worst, last = max(worst, now - last), now
    return worst


async def test_a_write_blocked_by_another_writer_leaves_the_loop_free_then_fails_as_busy(store: SqliteRunStore, db: Path) -> None:
    blocker = raw(db)
    blocker.execute("BEGIN IMMEDIATE")  # another process holding the write lock for 2 s
    held_since = time.monotonic()
    stop = asyncio.Event()
    ticker = asyncio.create_task(max_gap(stop))
    try:
        started = time.monotonic()
        with pytest.raises(StorageFailure) as failed:
            await store.create_conversation(new_id(), "t", utc_now())
        waited = time.monotonic() - started
        read_started = time.monotonic()
        await store.list_conversations()  # readers never wait for the writer
        read_took = time.monotonic() - read_started
        await asyncio.sleep(max(0.0, 2.0 - (time.monotonic() - held_since)))
    finally:
        blocker.execute("ROLLBACK")
        stop.set()
    assert await ticker < FREE
    assert 0.4 <= waited < 1.9 and read_took < FREE
    assert failed.value.message == BUSY_MESSAGE and isinstance(failed.value.__cause__, sqlite3.OperationalError)
    await store.create_conversation(new_id(), "t", utc_now())  # the lock is free again


async def test_a_write_within_the_busy_timeout_goes_through_once_the_lock_is_free(db: Path) -> None:
    store = await SqliteRunStore.open(str(db), busy_timeout=5.0)
    blocker = raw(db)
    blocker.execute("BEGIN IMMEDIATE")
    stop = asyncio.Event()
    ticker = asyncio.create_task(max_gap(stop))
    try:
        cid = new_id()
        write = asyncio.create_task(store.create_conversation(cid, "t", utc_now()))
        await asyncio.sleep(0.5)
        assert not write.done()
        blocker.execute("COMMIT")
        await asyncio.wait_for(write, 5)
        assert await store.get_conversation(cid) is not None
    finally:
        stop.set()
        if blocker.in_transaction:
            blocker.execute("ROLLBACK")
        await store.aclose()
    assert await ticker < FREE


# --- storage faults ----------------------------------------------------------------------


async def test_a_read_only_database_gives_storage_failure_on_every_write(store: SqliteRunStore, db: Path) -> None:
    run = await a_running_run(store, RealClock())
    idle = new_id()
    await store.create_conversation(idle, "idle", utc_now())
    readonly = await SqliteRunStore.open(f"file:{db}?mode=ro")
    try:
        assert (await readonly.get_run(run.id)) is not None  # reading still works
        now = utc_now()
        writes: list[Callable[[], Awaitable[object]]] = [
            lambda: readonly.create_conversation(new_id(), "t", now),
            lambda: readonly.rename_conversation(run.conversation_id, "x", now),
            lambda: readonly.start_run(Run(new_id(), idle, RunStatus.RUNNING, now), now),
            lambda: readonly.finish_run(run.id, RunFinish(RunStatus.COMPLETED, now, event=StreamEvent("end", {}))),
            lambda: readonly.renew(OWNER, [run.id]),
            lambda: readonly.append({run.id: [(1, StreamEvent("token", "a"))]}),
            lambda: readonly.request_cancel(run.id),
            lambda: readonly.call_started("k", run.conversation_id, run.id, "t", False, now),
            lambda: readonly.prune(0),
            lambda: readonly.delete_conversation(idle),
        ]
        for write in writes:
            with pytest.raises(StorageFailure) as failed:
                await write()
            assert failed.value.message == WRITE_MESSAGE
            assert "readonly" in str(failed.value.__cause__)  # the raw error is kept as the cause
    finally:
        await readonly.aclose()
    assert (await store.get_run(run.id)).status is RunStatus.RUNNING  # type: ignore[union-attr]


async def test_a_closed_store_refuses_calls_with_storage_failure(db: Path) -> None:
    store = await SqliteRunStore.open(str(db))
    await store.aclose()
    with pytest.raises(StorageFailure):
        await store.get_conversation(new_id())
    with pytest.raises(StorageFailure):
        await store.create_conversation(new_id(), "t", utc_now())
    store.close()  # closing twice is harmless


# --- several processes on one file -------------------------------------------------------


async def test_two_stores_on_one_file_share_runs_cancels_and_events(store: SqliteRunStore, db: Path) -> None:
    other = await SqliteRunStore.open(str(db), poll_interval=0.01)
    try:
        run = await a_running_run(store, RealClock())
        with pytest.raises(SessionInProgress):
            await other.start_run(Run(new_id(), run.conversation_id, RunStatus.RUNNING, utc_now()), utc_now())
        follower = asyncio.create_task(other.wait(run.id, 0, timeout=5))
        await store.append({run.id: [(1, StreamEvent("token", "hi"))]})
        assert await asyncio.wait_for(follower, 2) == ((1, StreamEvent("token", "hi")),)
        assert await other.request_cancel(run.id)
        assert await store.cancel_requested([run.id]) == {run.id}
    finally:
        await other.aclose()


async def test_a_paused_owner_writes_nothing_after_a_takeover(store: SqliteRunStore, db: Path) -> None:
    reclaimer = await SqliteRunStore.open(str(db))
    try:
        run = await a_running_run(store, RealClock())
        await asyncio.sleep(0.1)  # the owner is paused past its lease
        seen = await reclaimer.latest_run(run.conversation_id, lease_seconds=0.05)
        assert seen is not None and seen.lease_expired
        lost = RunFinish(
            RunStatus.INTERRUPTED,
            utc_now(),
            RunError("RUN_LOST", "owner gone"),
            event=StreamEvent("chat-error", {}),
        )
        assert await reclaimer.finish_run(run.id, lost, heartbeat=seen.heartbeat_at)
        # the owner wakes up
        assert await store.renew(OWNER, [run.id]) == set()
        await store.append({run.id: [(1, StreamEvent("token", "late"))]})
        with pytest.raises(RunLost):
            await store.call_started("k", run.conversation_id, run.id, "t", True, utc_now())
        assert not await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, utc_now()), owner=OWNER)
        assert [e.event for _, e in await reclaimer.read(run.id, 0)] == ["chat-error"]
        assert not await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, utc_now()), owner=other_owner())
    finally:
        await reclaimer.aclose()


async def test_a_follower_in_the_writing_process_wakes_up_without_waiting_for_a_poll(db: Path) -> None:
    store = await SqliteRunStore.open(str(db), poll_interval=5.0)
    try:
        run = await a_running_run(store, RealClock())
        follower = asyncio.create_task(store.wait(run.id, 0, timeout=10))
        await asyncio.sleep(0.05)
        started = time.monotonic()
        await store.append({run.id: [(1, StreamEvent("token", "a"))]})
        assert len(await asyncio.wait_for(follower, 2)) == 1
        assert time.monotonic() - started < 1.0  # a poll would take 5 s
        follower = asyncio.create_task(store.wait(run.id, 1, timeout=10))
        await asyncio.sleep(0.05)
        started = time.monotonic()
        await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, utc_now(), event=StreamEvent("end", {})))
        assert [e.event for _, e in await asyncio.wait_for(follower, 2)] == ["end"]
        assert time.monotonic() - started < 1.0  # a poll would take 5 s
    finally:
        await store.aclose()


async def test_a_follower_in_another_process_sees_events_within_the_poll_interval(store: SqliteRunStore, db: Path) -> None:
    other = await SqliteRunStore.open(str(db), poll_interval=0.05)
    try:
        run = await a_running_run(store, RealClock())
        delays = []
        for seq in range(1, 11):
            follower = asyncio.create_task(other.wait(run.id, seq - 1, timeout=5))
            await asyncio.sleep(0.013 * seq % 0.05)  # land anywhere in the poll period
            started = time.monotonic()
            await store.append({run.id: [(seq, StreamEvent("token", str(seq)))]})
            assert [s for s, _ in await asyncio.wait_for(follower, 2)] == [seq]
            delays.append(time.monotonic() - started)
        assert max(delays) < 0.25
    finally:
        await other.aclose()


async def test_a_file_from_before_crons_keeps_its_schedules_which_send_messages(db: Path) -> None:
    made = await SqliteRunStore.open(str(db))
    now = utc_now().replace(microsecond=0)  # stored to the millisecond
    schedule = Schedule(new_id(), "u", Timing("0 8 * * *"), "hello", now).armed(now)
    await made.put_schedule(schedule)
    await made.aclose()
    conn = raw(db)  # the file as it was before add_crons
    conn.execute("ALTER TABLE schedules DROP COLUMN graph")
    conn.execute("ALTER TABLE schedules DROP COLUMN webhook")
    conn.execute(f"PRAGMA user_version = {MIGRATIONS.index(add_crons)}")
    conn.commit()
    conn.close()
    store = await SqliteRunStore.open(str(db))
    try:
        assert store.schema_version == len(MIGRATIONS)
        assert await store.schedule(schedule.id) == schedule  # no graph, no webhook
    finally:
        await store.aclose()
