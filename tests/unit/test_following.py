"""Following a chain of runs (services.following.follow_chain), as /api's `follow=queue`
and the LangGraph API's streams and joins do: a queued message's run once it starts, the
run that resumed one a crash stopped, and nothing after a run nobody goes on with."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncGenerator
from datetime import timedelta
from typing import Any

import pytest

from domain.commands import start_command
from domain.events import StreamEvent
from domain.model import Run, RunStatus, RunTrigger, utc_now
from domain.queue import QueuedMessage
from services.handles import RunStream
from services.supervisor import Supervisor
from tests.support.fake_engine import Script
from tests.support.harness import Harness, make_harness
from tests.unit.test_lifecycle import World


async def events_of(stream: RunStream) -> list[StreamEvent]:
    return [event async for batch in stream for _, event in batch]


async def enqueue(h: Harness, text: str, cid: str) -> QueuedMessage:
    queued = await h.queue.send(start_command(text, cid, multitask="enqueue"))  # type: ignore[arg-type]
    assert isinstance(queued, QueuedMessage)
    return queued


def count_reads(store: Any, reads: Counter[str], *names: str) -> None:
    for name in names:
        read = getattr(store, name)

        async def counted(*args: Any, _read: Any = read, _name: str = name, **kw: Any) -> Any:
            reads[_name] += 1
            return await _read(*args, **kw)

        setattr(store, name, counted)


async def test_a_stream_of_a_queued_message_waits_for_the_run_before_it_without_polling_the_store() -> None:
    h = make_harness([" ".join(f"w{i}" for i in range(12)), "second answer"], delay=0.05)
    first = await h.runs.start(start_command("foo"))
    cid = first.conversation_id
    queued = await enqueue(h, "bar", cid)
    reads: Counter[str] = Counter()
    count_reads(h.repo, reads, "get_run", "latest_run", "queued", "get_conversation")
    runs = h.runs.follow_from(queued)
    stream = await anext(runs)
    assert stream.run_id == queued.id
    batches = [batch async for batch in stream]
    # waiting behind a run that streamed for more than half a second: a few reads, then
    # the end of that run wakes the wait (a poll every 0.1 s made four reads a round)
    assert sum(reads.values()) <= 8, reads
    assert (await h.events_of(first))[-1].data["status"] == "completed"
    names = [event.event for batch in batches for _, event in batch]
    assert "token" in names and names[-1] == "end" and batches[-1][-1][1].data["status"] == "completed"
    with pytest.raises(StopAsyncIteration):  # a completed run: nothing goes on with it
        await anext(runs)


async def test_a_stream_of_a_queued_message_stops_waiting_when_the_process_drains() -> None:
    h = make_harness(["long " * 60, "never said"], delay=0.05)
    first = await h.runs.start(start_command("foo"))
    cid = first.conversation_id
    queued = await enqueue(h, "bar", cid)
    stream = await anext(h.runs.follow_from(queued))
    await h.supervisor.drain(0)  # the run before it is stopped; this process starts nothing more
    assert await events_of(stream) == []
    assert [q.id for q in await h.queue.waiting(cid)] == [queued.id]  # still queued, for a live process


async def interrupted_by_a_takeover(w: World) -> Run:
    """A run of process a, taken over by process b (a's lease ran out) and recorded interrupted."""
    started = await w.a.start(start_command("hello"))
    w.store.clock = lambda: utc_now() + timedelta(seconds=1)  # type: ignore[method-assign]
    assert await Supervisor(w.b).recover() == 1
    run = await w.store.get_run(started.run_id)
    assert run is not None and run.status is RunStatus.INTERRUPTED
    return run


async def follow(runs: AsyncGenerator[RunStream, None]) -> list[tuple[str, list[StreamEvent]]]:
    return [(stream.run_id, await events_of(stream)) async for stream in runs]


async def test_a_rejoin_of_a_run_a_crash_stopped_goes_on_with_the_run_that_adopted_it() -> None:
    gate = asyncio.Event()
    w = World(Script(tokens=["late"], gate=gate), Script(tokens=["adopted"]), lease=0.05)
    run = await interrupted_by_a_takeover(w)
    [adopted] = await Supervisor(w.b, auto_resume=True).adopt()
    seen = await follow(w.b.follow_from(run))
    assert [rid for rid, _ in seen] == [run.id, adopted.run_id]
    assert seen[0][1][-1].data["status"] == "interrupted" and seen[1][1][-1].data["status"] == "completed"
    gate.set()
    await w.wait_finished(w.a)


async def test_a_rejoin_of_a_run_nobody_resumed_goes_on_with_a_resume_it_starts() -> None:
    gate = asyncio.Event()
    w = World(Script(tokens=["late"], gate=gate), Script(tokens=["resumed"]), lease=0.05)
    run = await interrupted_by_a_takeover(w)
    seen = await follow(w.b.follow_from(run))
    assert len(seen) == 2 and seen[0][0] == run.id
    resumed = await w.store.get_run(seen[1][0])
    assert resumed is not None and resumed.trigger is RunTrigger.USER and resumed.started_at >= run.started_at
    assert seen[1][1][-1].data["status"] == "completed"
    gate.set()
    await w.wait_finished(w.a)
