"""The replay buffer of a run executed here is bounded; older events come from the event log."""

from __future__ import annotations

import asyncio
import uuid
from functools import partial

import pytest

from adapters.memory.runs import InMemoryRunStore
from domain.events import StreamEvent
from services.hub import ActiveRun
from tests.contracts.run_stores import RealClock, a_running_run


async def flush(store: InMemoryRunStore, active: ActiveRun) -> None:
    """What the supervisor's flusher does."""
    items = active.take_unflushed()
    await store.append({active.run_id: items})
    active.mark_flushed(items)


def ids(items: list[tuple[int, StreamEvent]]) -> list[int]:
    return [i for i, _ in items]


async def test_the_buffer_keeps_only_the_latest_events_once_they_are_in_the_log() -> None:
    store = InMemoryRunStore()
    run = await a_running_run(store, RealClock())
    active = ActiveRun(run.id, run.conversation_id, history=partial(store.read, run.id), replay_limit=10)
    for n in range(1, 101):
        active.publish(StreamEvent("token", f"t{n}"))
    assert len(active.events) == 100  # none is in the log yet: none may go
    await flush(store, active)
    assert ids(list(active.events)) == list(range(91, 101))
    for n in range(101, 121):
        active.publish(StreamEvent("token", f"t{n}"))
    assert ids(list(active.events)) == list(range(101, 121))  # unflushed ones stay, past the bound
    await flush(store, active)
    assert len(active.events) == 10 and active.next_id == 121


async def test_a_subscriber_asking_for_events_older_than_the_buffer_gets_them_from_the_log_exactly() -> None:
    store = InMemoryRunStore()
    run = await a_running_run(store, RealClock())
    active = ActiveRun(run.id, run.conversation_id, history=partial(store.read, run.id), replay_limit=10)
    active.publish(StreamEvent("trace", {"event": "enter"}))
    for n in range(2, 201):
        active.publish(StreamEvent("token", f"t{n}"))
    await flush(store, active)
    for n in range(201, 206):  # published, not flushed yet
        active.publish(StreamEvent("token", f"t{n}"))
    for after in (0, 1, 57, 190, 195, 204):
        batches = active.batches(after)
        replay = await anext(batches)
        assert ids(replay) == list(range(after + 1, active.last_id + 1))
        assert all(e.data == f"t{i}" for i, e in replay if 1 < i < 206)
        live = asyncio.ensure_future(anext(batches))
        await asyncio.sleep(0)
        active.publish(StreamEvent("token", "live"))
        assert ids(await asyncio.wait_for(live, 1)) == [active.last_id]
        await batches.aclose()
    active.publish(StreamEvent("end", {"status": "completed"}), durable=False)
    active.close()
    replay = await anext(active.batches(3))
    assert ids(replay) == list(range(4, active.last_id + 1)) and replay[-1][1].event == "end"


async def test_without_an_event_log_nothing_is_dropped() -> None:
    active = ActiveRun(str(uuid.uuid4()), str(uuid.uuid4()), replay_limit=10)
    for n in range(50):
        active.publish(StreamEvent("token", str(n)))
    active.mark_flushed(active.take_unflushed())
    assert len(active.events) == 50
    assert ids(await anext(active.batches(0))) == list(range(1, 51))


@pytest.mark.parametrize("limit", [1, 1000])
async def test_replay_limit_is_respected_for_any_bound(limit: int) -> None:
    store = InMemoryRunStore()
    run = await a_running_run(store, RealClock())
    active = ActiveRun(run.id, run.conversation_id, history=partial(store.read, run.id), replay_limit=limit)
    for n in range(3000):
        active.publish(StreamEvent("token", str(n)))
        if n % 97 == 0:
            await flush(store, active)
    await flush(store, active)
    assert len(active.events) == limit
    assert ids(await anext(active.batches(0))) == list(range(1, 3001))
