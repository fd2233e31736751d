"""The WebhookOutbox contract (ports.webhooks), with its half on finish_run: a run that names
a webhook makes exactly one delivery in its outcome's transaction, claimed by one caller at a
time, taken again (same id) once a claim's lease ran out, settled once. Every adapter."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Protocol

from domain.model import Run, RunError, RunStatus, RunTrigger, new_id
from domain.schedules import FiringClaim, Schedule, Timing
from ports.runs import RunFinish
from ports.schedules import ScheduleStore
from ports.webhooks import WebhookOutbox
from tests.contracts.run_stores import (
    OWNER,
    InMemoryStores,
    PostgresStores,
    RunStore,
    SqliteStores,
    StoreClock,
    StoreContract,
    a_conversation,
    a_running_run,
)

URL = "https://hooks.example.com/in"


class Store(RunStore, ScheduleStore, WebhookOutbox, Protocol):
    """A run store with the outbox (every adapter)."""


async def finished_with_hook(store: Store, clock: StoreClock, status: RunStatus = RunStatus.COMPLETED) -> tuple[str, str]:
    cid = await a_conversation(store, clock)
    run_id = new_id()
    await store.attach_webhook(run_id, cid, URL)
    await store.start_run(Run(run_id, cid, RunStatus.RUNNING, clock.now(), owner=OWNER), clock.now())
    error = RunError("AGENT_FAILURE", "boom") if status is RunStatus.FAILED else None
    assert await store.finish_run(run_id, RunFinish(status, clock.now(), error=error))
    return cid, run_id


class WebhookOutboxContract(StoreContract):
    async def test_a_run_with_a_webhook_makes_one_delivery_with_its_outcome(self, store: Store, clock: StoreClock) -> None:
        cid, run_id = await finished_with_hook(store, clock, RunStatus.FAILED)
        [(delivery, state)] = await store.deliveries(run_id)
        body = json.loads(delivery.body)
        assert state == "pending" and delivery.url == URL and delivery.attempts == 0
        assert body["deliveryId"] == delivery.id and body["runId"] == run_id and body["conversationId"] == cid
        assert body["status"] == "failed" and body["error"] == {"code": "AGENT_FAILURE", "message": "boom"}
        assert body["scheduledFor"] is None and body["endedAt"].endswith("Z")

    async def test_a_run_without_a_webhook_makes_none(self, store: Store, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        assert await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, clock.now()))
        assert await store.deliveries(run.id) == [] and await store.run_webhook(run.id) is None

    async def test_a_run_kwargs_webhook_counts_too(self, store: Store, clock: StoreClock) -> None:
        cid = await a_conversation(store, clock)
        run = await a_running_run(store, clock, cid)
        assert await store.set_run_kwargs(cid, run.id, {"graph_id": "g", "webhook": URL})
        assert await store.run_webhook(run.id) == URL
        assert await store.finish_run(run.id, RunFinish(RunStatus.CANCELLED, clock.now()))
        [(delivery, _)] = await store.deliveries(run.id)
        assert json.loads(delivery.body)["status"] == "cancelled"

    async def test_a_scheduled_run_tells_its_firing_time(self, store: Store, clock: StoreClock) -> None:
        cid = await a_conversation(store, clock)
        at = clock.now().replace(microsecond=0) + timedelta(seconds=1)
        s = Schedule(new_id(), "u", Timing("* * * * * *"), "tick", clock.now(), cid, next_at=at)
        await store.put_schedule(s)
        run = Run(new_id(), cid, RunStatus.RUNNING, clock.now(), owner=OWNER, trigger=RunTrigger.SCHEDULE)
        await store.attach_webhook(run.id, cid, URL)
        await store.start_run(run, clock.now(), firing=FiringClaim(s.id, at, at + timedelta(seconds=1)))
        assert await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, clock.now()))
        [(delivery, _)] = await store.deliveries(run.id)
        assert json.loads(delivery.body)["scheduledFor"] == at.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    async def test_a_claim_takes_a_delivery_once_until_its_lease_runs_out(self, store: Store, clock: StoreClock) -> None:
        _, run_id = await finished_with_hook(store, clock)
        now = clock.now() + timedelta(seconds=1)
        [first] = await store.claim_deliveries(now, 30, 10)
        assert first.attempts == 1 and first.run_id == run_id
        assert await store.claim_deliveries(now, 30, 10) == []  # claimed: nobody else takes it
        [again] = await store.claim_deliveries(now + timedelta(seconds=31), 30, 10)  # its process died
        assert again.id == first.id and again.attempts == 2
        assert not await store.settle_delivery(first, None, None)  # the lapsed claim settles nothing
        assert await store.settle_delivery(again, None, None)
        assert [s for _, s in await store.deliveries(run_id)] == ["delivered"]
        assert await store.claim_deliveries(now + timedelta(hours=1), 30, 10) == []

    async def test_a_failed_attempt_waits_for_its_retry_and_the_last_one_gives_up(self, store: Store, clock: StoreClock) -> None:
        _, run_id = await finished_with_hook(store, clock)
        now = clock.now() + timedelta(seconds=1)
        [d] = await store.claim_deliveries(now, 30, 10)
        assert await store.settle_delivery(d, now + timedelta(seconds=10), "HTTP 500")
        assert await store.claim_deliveries(now + timedelta(seconds=5), 30, 10) == []
        [d2] = await store.claim_deliveries(now + timedelta(seconds=10), 30, 10)
        assert d2.id == d.id and d2.attempts == 2
        assert await store.settle_delivery(d2, None, "HTTP 500")
        assert [s for _, s in await store.deliveries(run_id)] == ["failed"]

    async def test_concurrent_claims_never_share_a_delivery(self, store: Store, clock: StoreClock) -> None:
        runs = [(await finished_with_hook(store, clock))[1] for _ in range(6)]
        now = clock.now() + timedelta(seconds=1)
        batches = await asyncio.gather(*(store.claim_deliveries(now, 30, 2) for _ in range(5)))
        ids = [d.id for batch in batches for d in batch]
        assert len(ids) == len(set(ids)) == len(runs)

    async def test_a_users_secret_is_made_once(self, store: Store, clock: StoreClock) -> None:
        first = await store.webhook_secret("u1", "a" * 64)
        assert first == "a" * 64
        assert await store.webhook_secret("u1", "b" * 64) == first
        assert await store.webhook_secret("u2", "c" * 64) == "c" * 64


class TestInMemoryWebhookOutbox(InMemoryStores, WebhookOutboxContract):
    pass


class TestSqliteWebhookOutbox(SqliteStores, WebhookOutboxContract):
    pass


class TestPostgresWebhookOutbox(PostgresStores, WebhookOutboxContract):
    pass
