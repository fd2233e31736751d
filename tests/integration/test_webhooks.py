"""Webhooks (issue 46) at a real local receiver: a run's outcome arrives signed with its
owner's secret and is processed once; a receiver's 500 is retried after the backoff (a
hand-driven clock, no sleeps); redirects are not followed; an endless answer and a silent
receiver cost a bounded time; private addresses are refused when named and again at
delivery; /api/chat, /api/schedules and the LangGraph API take a webhook end to end."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from adapters.memory.metrics import InMemoryMetrics
from adapters.memory.runs import InMemoryRunStore
from adapters.webhooks.http import HttpxWebhookSender, SystemResolver
from domain.model import Run, RunStatus, new_id
from domain.principals import Principal, Role
from domain.webhooks import MAX_ATTEMPTS, AllowedHosts, WebhookNotAllowed
from entrypoints.container import create_container
from entrypoints.http.app import create_app
from entrypoints.lgapi.app import create_lgapi_app
from ports.runs import RunFinish
from services.webhooks import WebhookService
from tests.contracts.run_stores import OWNER
from tests.integration.test_schedules import wait_for
from tests.integration.test_users_server import EXIT_NOT_FOUND, sophos
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama
from tests.support.webhook_receiver import Receiver

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
USER = Principal("u1", "ann", Role.USER)
LOCAL_ONLY = AllowedHosts.parse("127.0.0.1")


class Clock:
    def __init__(self) -> None:
        self.at = T0 + timedelta(seconds=2)  # the runs below end at T0 + 1 s

    def __call__(self) -> datetime:
        return self.at


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as r:
        yield r


def service_of(store: InMemoryRunStore, clock: Clock, allowed: AllowedHosts = LOCAL_ONLY, timeout: float = 2.0) -> WebhookService:
    return WebhookService(
        store, SystemResolver(), HttpxWebhookSender(timeout), allowed, InMemoryMetrics(), retry_seconds=10, clock=clock
    )


async def ended_run(store: InMemoryRunStore, url: str, status: RunStatus = RunStatus.COMPLETED) -> str:
    cid = new_id()
    await store.create_conversation(cid, "t", T0, owner=USER.user_id)
    run = Run(new_id(), cid, RunStatus.RUNNING, T0, owner=OWNER)
    await store.attach_webhook(run.id, cid, url)
    await store.start_run(run, T0)
    assert await store.finish_run(run.id, RunFinish(status, T0 + timedelta(seconds=1)))
    return run.id


async def states(store: InMemoryRunStore, run_id: str) -> list[str]:
    return [state for _, state in await store.deliveries(run_id)]


async def test_an_outcome_arrives_signed_with_its_owners_secret(receiver: Receiver) -> None:
    store, clock = InMemoryRunStore(), Clock()
    service = service_of(store, clock)
    receiver.secret = await service.secret(USER)
    run_id = await ended_run(store, receiver.url("/ok"), RunStatus.FAILED)
    assert await service.deliver_due() == 1
    [(delivery, state)] = await store.deliveries(run_id)
    assert state == "delivered" and receiver.bad_signatures == 0
    assert receiver.processed[delivery.id]["runId"] == run_id and receiver.processed[delivery.id]["status"] == "failed"
    assert service.metrics.counts["webhook_deliveries"] == {("delivered",): 1}  # type: ignore[attr-defined]
    assert await service.deliver_due() == 0  # delivered: never called again


async def test_a_wrong_secret_fails_the_receivers_check(receiver: Receiver) -> None:
    store, clock = InMemoryRunStore(), Clock()
    service = service_of(store, clock)
    receiver.secret = "not the user's"
    run_id = await ended_run(store, receiver.url("/ok"))
    assert await service.deliver_due() == 0
    assert receiver.bad_signatures == 1 and await states(store, run_id) == ["pending"]


async def test_a_receivers_500_is_retried_after_the_backoff_with_the_same_id(receiver: Receiver) -> None:
    store, clock = InMemoryRunStore(), Clock()
    service = service_of(store, clock)
    receiver.secret = await service.secret(USER)
    run_id = await ended_run(store, receiver.url("/fail-once"))
    clock.at += timedelta(seconds=2)
    assert await service.deliver_due() == 0
    assert await states(store, run_id) == ["pending"]
    clock.at += timedelta(seconds=9)  # the first retry waits 10 s
    assert await service.deliver_due() == 0 and sum(receiver.arrivals.values()) == 1
    clock.at += timedelta(seconds=1)
    assert await service.deliver_due() == 1
    [(delivery, state)] = await store.deliveries(run_id)
    assert state == "delivered" and receiver.arrivals == {delivery.id: 2} and list(receiver.processed) == [delivery.id]
    assert service.metrics.counts["webhook_deliveries"] == {("retried",): 1, ("delivered",): 1}  # type: ignore[attr-defined]


async def test_a_delivery_is_given_up_after_its_last_attempt(receiver: Receiver) -> None:
    store, clock = InMemoryRunStore(), Clock()
    service = service_of(store, clock)
    run_id = await ended_run(store, receiver.url("/err"))
    for _ in range(MAX_ATTEMPTS):
        clock.at += timedelta(hours=1)
        await service.deliver_due()
    assert await states(store, run_id) == ["failed"] and sum(receiver.arrivals.values()) == MAX_ATTEMPTS
    clock.at += timedelta(days=1)
    assert await service.deliver_due() == 0 and sum(receiver.arrivals.values()) == MAX_ATTEMPTS
    assert service.metrics.counts["webhook_deliveries"][("failed",)] == 1  # type: ignore[attr-defined]


async def test_a_redirect_is_not_followed(receiver: Receiver) -> None:
    store, clock = InMemoryRunStore(), Clock()
    run_id = await ended_run(store, receiver.url("/redirect"))
    assert await service_of(store, clock).deliver_due() == 0
    assert receiver.paths == ["/redirect"] and await states(store, run_id) == ["pending"]


async def test_an_endless_answer_is_read_only_in_part(receiver: Receiver) -> None:
    store, clock = InMemoryRunStore(), Clock()
    receiver.secret = ""
    run_id = await ended_run(store, receiver.url("/big"))
    begun = time.monotonic()
    assert await service_of(store, clock, timeout=5.0).deliver_due() == 1
    assert time.monotonic() - begun < 2.0 and await states(store, run_id) == ["delivered"]


async def test_a_receiver_that_never_answers_costs_the_timeout_and_is_retried(receiver: Receiver) -> None:
    store, clock = InMemoryRunStore(), Clock()
    run_id = await ended_run(store, receiver.url("/slow"))
    begun = time.monotonic()
    assert await service_of(store, clock, timeout=0.5).deliver_due() == 0
    assert time.monotonic() - begun < 2.0 and await states(store, run_id) == ["pending"]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/x",
        "http://localhost:9/x",
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.7/",
        "http://[::1]:9/",
        "http://[::ffff:127.0.0.1]/",
    ],
)
async def test_a_private_address_is_refused_by_default(url: str) -> None:
    service = service_of(InMemoryRunStore(), Clock(), allowed=AllowedHosts())
    with pytest.raises(WebhookNotAllowed, match="private, loopback or link-local"):
        await service.check(url)


async def test_an_address_no_longer_allowed_at_delivery_is_not_called(receiver: Receiver) -> None:
    store, clock = InMemoryRunStore(), Clock()
    run_id = await ended_run(store, receiver.url("/ok"))  # named while 127.0.0.1 was allowed
    assert await service_of(store, clock, allowed=AllowedHosts()).deliver_due() == 0
    assert receiver.paths == [] and await states(store, run_id) == ["pending"]


# --- end to end: the server ------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path, ollama: FakeOllama) -> Iterator[tuple[TestClient, Any]]:
    ollama.latency = 0.0
    container = create_container(app_env(tmp_path, ollama.url, TOOLS_BACKEND="none", WEBHOOK_ALLOWED_HOSTS="127.0.0.1"))
    with TestClient(create_app(container)) as client:
        yield client, container


def arrived(receiver: Receiver, run_id: str) -> dict[str, Any] | None:
    with receiver.lock:
        return next((b for b in receiver.processed.values() if b["runId"] == run_id), None)


def test_a_chat_runs_webhook_is_called_signed_when_it_ends(server: tuple[TestClient, Any], receiver: Receiver) -> None:
    client, _ = server
    receiver.secret = client.get("/api/webhooks/secret").json()["secret"]
    started = client.post("/api/chat", json={"message": "hello", "webhook": receiver.url("/ok")}).json()
    body = wait_for(lambda: arrived(receiver, started["run"]))
    assert body["conversationId"] == started["conversation"] and body["status"] == "completed"
    assert body["scheduledFor"] is None and receiver.bad_signatures == 0
    assert client.get("/api/webhooks/secret").json()["secret"] == receiver.secret  # stable
    metrics = client.get("/metrics").text
    assert 'sophos_webhook_deliveries_total{outcome="delivered"} 1.0' in metrics


@pytest.mark.parametrize("url", ["http://10.1.2.3/hook", "http://[::1]:8080/", "ftp://x/", "http://u:p@127.0.0.1/"])
def test_a_webhook_the_operator_did_not_allow_is_refused_with_400(server: tuple[TestClient, Any], url: str) -> None:
    client, _ = server
    for answer in (
        client.post("/api/chat", json={"message": "hello", "webhook": url}),
        client.post("/api/schedules", json={"cron": "0 8 * * *", "message": "x", "webhook": url}),
    ):
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["code"] == "WEBHOOK_NOT_ALLOWED"
    assert client.get("/api/conversations").json()["conversations"] == []
    assert client.get("/api/schedules").json()["schedules"] == []


def test_each_firing_of_a_schedule_calls_its_webhook_with_the_firings_time(
    server: tuple[TestClient, Any], receiver: Receiver
) -> None:
    client, _ = server
    receiver.secret = client.get("/api/webhooks/secret").json()["secret"]
    made = client.post("/api/schedules", json={"cron": "* * * * * *", "message": "tick", "webhook": receiver.url("/ok")})
    s = made.json()["schedule"]
    assert s["webhook"] == receiver.url("/ok")
    firing = wait_for(lambda: client.get(f"/api/schedules/{s['id']}/runs").json()["firings"])[-1]
    client.patch(f"/api/schedules/{s['id']}", json={"enabled": False})
    body = wait_for(lambda: arrived(receiver, firing["runId"]))
    assert body["scheduledFor"] == firing["scheduledFor"] and body["conversationId"] == firing["conversationId"]
    cleared = client.patch(f"/api/schedules/{s['id']}", json={"webhook": None}).json()["schedule"]
    assert cleared["webhook"] is None


def test_a_langgraph_api_runs_webhook_is_called(server: tuple[TestClient, Any], receiver: Receiver) -> None:
    client, container = server
    receiver.secret = client.get("/api/webhooks/secret").json()["secret"]
    with TestClient(create_lgapi_app(container.services(), container.settings(), asyncio.Event())) as lg:
        thread = lg.post("/threads", json={}).json()["thread_id"]
        body = {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "hi"}]}}
        run = lg.post(f"/threads/{thread}/runs/wait", json={**body, "webhook": receiver.url("/ok")})
        assert run.status_code == 200, run.text
        run_id = lg.get(f"/threads/{thread}/runs").json()[0]["run_id"]
        got = wait_for(lambda: arrived(receiver, run_id))
        assert got["threadId"] == thread and got["status"] == "completed"
        refused = lg.post(f"/threads/{thread}/runs", json={**body, "webhook": "http://192.168.1.1/"})
        assert refused.status_code == 400 and "not allowed" in json.dumps(refused.json())


def test_the_cli_shows_the_same_secret_a_user_reads_from_the_api(server: tuple[TestClient, Any], tmp_path: Path) -> None:
    client, container = server
    users = container.services().users()
    ann = client.portal.call(users.add, "ann", Role.USER)  # type: ignore[union-attr]
    token = client.portal.call(users.issue_token, ann.id, "test").token  # type: ignore[union-attr]
    theirs = client.get("/api/webhooks/secret", headers={"Authorization": f"Bearer {token}"}).json()["secret"]
    client.portal.call(users.add, "bob", Role.USER)  # type: ignore[union-attr]
    env = app_env(tmp_path, TOOLS_BACKEND="none")
    shown = sophos(env, "users", "webhook-secret", "ann")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == theirs and len(theirs) == 64
    bobs = sophos(env, "users", "webhook-secret", "bob")
    assert bobs.returncode == 0 and bobs.stdout.strip() not in ("", theirs)  # one per user
    assert sophos(env, "users", "webhook-secret", "nobody").returncode == EXIT_NOT_FOUND
