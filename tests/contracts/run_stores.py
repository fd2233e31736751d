"""The run stores under contract, and the helpers their suites share.

Each backend is a mixin with two fixtures: `store`, an empty store, and `clock`, the
store's clock as a test drives it (a hand-driven clock in memory; real time, slept
through, on SQLite and PostgreSQL, whose clock is the database's)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

import pytest

from adapters.memory.runs import InMemoryRunStore
from adapters.postgres.database import PostgresDatabase
from adapters.postgres.runs import PostgresRunStore
from adapters.sqlite.runs import SqliteRunStore
from domain.errors import InvalidTransition
from domain.lifecycle import TRANSITIONS
from domain.model import Run, RunError, RunOwner, RunStatus, new_id, utc_now
from ports.approvals import ApprovalStore
from ports.events import RunEventLog
from ports.journal import ToolJournal
from ports.queue import MessageQueue
from ports.runs import RunFinish, RunRepository
from ports.signals import RunSignals


class RunStore(RunRepository, RunEventLog, RunSignals, ToolJournal, ApprovalStore, MessageQueue, Protocol):
    """What every adapter implements: the six ports in one object."""


class StoreClock(Protocol):
    def now(self) -> datetime: ...

    async def advance(self, seconds: float) -> None: ...


class StoreContract:
    """The fixtures every run-store contract needs; each adapter's subclass provides them."""

    @pytest.fixture
    def store(self) -> RunStore:
        raise NotImplementedError

    @pytest.fixture
    def clock(self) -> StoreClock:
        raise NotImplementedError


class ManualClock:
    def __init__(self) -> None:
        self.time = utc_now()

    def __call__(self) -> datetime:
        return self.time

    def now(self) -> datetime:
        return self.time

    async def advance(self, seconds: float) -> None:
        self.time += timedelta(seconds=seconds)


class RealClock:
    def now(self) -> datetime:
        return utc_now()

    async def advance(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class InMemoryStores:
    @pytest.fixture
    def clock(self) -> ManualClock:
        return ManualClock()

    @pytest.fixture
    async def store(self, clock: ManualClock) -> AsyncIterator[RunStore]:
        store = InMemoryRunStore(clock)
        yield store
        await store.aclose()


class SqliteStores:
    @pytest.fixture
    def clock(self) -> RealClock:
        return RealClock()

    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[RunStore]:
        store = await SqliteRunStore.open(str(tmp_path / "db" / "sophos.db"), poll_interval=0.01)
        yield store
        await store.aclose()


class PostgresStores:
    @pytest.fixture
    def clock(self) -> RealClock:
        return RealClock()

    @pytest.fixture
    async def store(self, pg_url: str) -> AsyncIterator[RunStore]:
        store = PostgresRunStore(PostgresDatabase(pg_url), poll_interval=0.01)
        yield store
        await store.aclose()


OWNER = RunOwner("host-a", 100, 1.0, instance=new_id(), namespace=4026531836)


def other_owner() -> RunOwner:
    return RunOwner("host-b", 200, 2.0, instance=new_id(), namespace=7)


async def a_conversation(store: RunStore, clock: StoreClock) -> str:
    cid = new_id()
    await store.create_conversation(cid, "t", clock.now())
    return cid


async def a_running_run(store: RunStore, clock: StoreClock, cid: str | None = None, owner: RunOwner = OWNER) -> Run:
    cid = cid or await a_conversation(store, clock)
    run = Run(new_id(), cid, RunStatus.RUNNING, clock.now(), owner=owner)
    await store.start_run(run, clock.now())
    stored = await store.get_run(run.id)
    assert stored is not None
    return stored


class TransitionContract(StoreContract):
    """The lifecycle's transition table (domain.lifecycle.TRANSITIONS) is what a store
    applies: a transition the table refuses raises before anything is written, one it
    allows is a compare-and-set on the run's status."""

    async def test_an_invalid_transition_raises_and_changes_nothing(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        with pytest.raises(InvalidTransition):
            await store.finish_run(run.id, RunFinish(RunStatus.RUNNING, clock.now()))
        stored = await store.get_run(run.id)
        assert stored is not None and stored.status is RunStatus.RUNNING

    async def test_every_outcome_the_table_allows_applies_to_a_running_run(self, store: RunStore, clock: StoreClock) -> None:
        for target in sorted(TRANSITIONS[RunStatus.RUNNING]):
            run = await a_running_run(store, clock)
            assert await store.finish_run(run.id, RunFinish(target, clock.now()))
            stored = await store.get_run(run.id)
            assert stored is not None and stored.status is target

    async def test_a_valid_transition_applies_only_from_its_source(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        assert await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, clock.now()))
        # allowed by the table from `running`, but the run is no longer running
        assert not await store.finish_run(run.id, RunFinish(RunStatus.FAILED, clock.now()))
        assert not await store.give_up(run.id, RunError("ADOPTION_FAILED", "x"), clock.now())
        stored = await store.get_run(run.id)
        assert stored is not None and stored.status is RunStatus.COMPLETED
