"""What the run lifecycle reports through the MetricsPort, read from the in-memory adapter."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from adapters.memory.metrics import InMemoryMetrics
from domain import lifecycle
from domain.commands import start_command
from domain.errors import ModelUnreachable, StorageFailure
from domain.events import StreamEvent
from domain.model import Run, RunStatus, RunTrigger, new_id, utc_now
from ports.runs import RunFinish
from services.runs import RunService
from services.supervisor import Supervisor
from tests.support.fake_engine import Script, Thread
from tests.support.harness import make_harness, recording_tool
from tests.unit.test_lifecycle import OTHER, World


def metered(w: World, name: str) -> InMemoryMetrics:
    """Process `name` of the world ("a" or "b") made again, reporting to metrics of its own
    (a service's metrics are fixed when it is built)."""
    old: RunService = getattr(w, name)
    metrics = InMemoryMetrics()
    setattr(
        w,
        name,
        RunService(
            old.stores,
            old.engine,
            old.processes,
            lease_seconds=old.deps.lease_seconds,
            cancel_wait=old.cancel_wait,
            poll_seconds=old.deps.poll_seconds,
            metrics=metrics,
        ),
    )
    return metrics


async def test_a_completed_run_is_counted_once_with_its_duration_and_model_call() -> None:
    h = make_harness(["Hello there"])
    await h.send("hi")
    m = h.metrics
    assert m.counts["runs_started"] == {("user",): 1}
    assert m.counts["runs_finished"] == {("completed", ""): 1}
    assert m.counts["runs_active"][()] == 0
    [duration] = m.observed["run_duration"][("completed",)]
    [model_call] = m.observed["model_call"][("scripted", "ok")]
    assert 0 < model_call <= duration


async def test_a_failed_run_is_counted_with_its_error_code_and_a_failed_model_call() -> None:
    h = make_harness([ModelUnreachable()])
    await h.send("hi")
    assert h.metrics.counts["runs_finished"] == {("failed", "MODEL_UNREACHABLE"): 1}
    assert list(h.metrics.observed["model_call"]) == [("scripted", "error")]
    assert h.metrics.counts["runs_active"][()] == 0


async def test_tool_calls_are_timed_per_tool_and_a_tool_nobody_offers_is_labelled_unknown() -> None:
    log: list[tuple[str, dict[str, object], str]] = []
    made_up = "x" * 40 + "__anything"  # whatever name the model invents never becomes a label
    h = make_harness([[("t__a", {}), (made_up, {})], "done"], tools=[recording_tool(log, "t__a")])
    await h.send("use tools")
    tool_calls = h.metrics.observed["tool_call"]
    assert sorted(tool_calls) == [("t__a", "ok"), ("unknown", "error")]
    assert all(len(seconds) == 1 for seconds in tool_calls.values())
    assert len(h.metrics.observed["model_call"][("scripted", "ok")]) == 2


async def test_a_local_stream_is_active_while_it_is_read_and_not_after_it_is_closed() -> None:
    h = make_harness(["a b c d e f g h"], delay=0.05)
    started = await h.runs.start(start_command("hi"))
    streams = h.metrics.counts["streams_active"]
    answer = await h.runs.follow(started.conversation_id, 0)
    assert not isinstance(answer, StreamEvent)
    first = await anext(answer)
    assert first[0] == 1 and streams[("local",)] == 1
    await answer.aclose()  # type: ignore[attr-defined]  # the client went away
    assert streams[("local",)] == 0
    whole = await h.runs.follow(started.conversation_id, 0)
    assert not isinstance(whole, StreamEvent)
    items = [item async for item in whole]
    assert items[-1][1].event == "end" and streams[("local",)] == 0


async def test_a_follower_of_another_process_is_counted_as_a_log_stream() -> None:
    w = World(Script(tokens=["t"] * 30, pause=0.01))
    metrics = metered(w, "b")
    started = await w.a.start(start_command("long"))
    sup = Supervisor(w.a, flush_seconds=0.01)
    await sup.start()
    try:
        answer = await w.b.follow(started.conversation_id, 0)
        assert not isinstance(answer, StreamEvent)
        await anext(answer)
        assert metrics.counts["streams_active"][("log",)] == 1
        rest = [item async for item in answer]
    finally:
        await sup.close()
    assert rest[-1][1].event == "end"
    assert metrics.counts["streams_active"][("log",)] == 0


async def test_a_takeover_counts_the_reclaim_the_lost_lease_the_lost_run_and_the_adoption() -> None:
    gate = asyncio.Event()
    w = World(Script(tokens=["late"], gate=gate), Script(tokens=["adopted"]), lease=0.05)
    victim, taker = metered(w, "a"), metered(w, "b")
    await w.a.start(start_command("hello"))
    await asyncio.sleep(0.1)  # the owner is "paused": its lease runs out
    w.store.clock = lambda: utc_now() + timedelta(seconds=1)  # type: ignore[method-assign]
    assert await Supervisor(w.b).recover() == 1
    assert len(await Supervisor(w.b, auto_resume=True).adopt()) == 1
    await w.wait_finished(w.b)
    await Supervisor(w.a).renew()  # the paused owner wakes up and finds its lease gone
    gate.set()
    await w.wait_finished(w.a)
    assert taker.counts["runs_reclaimed"] == {("interrupted",): 1}
    assert taker.counts["adoptions"] == {("adopted",): 1}
    assert taker.counts["runs_started"] == {("adopt",): 1}
    assert taker.counts["runs_finished"] == {("completed", ""): 1}
    assert victim.counts["leases_lost"] == {(): 1}
    assert victim.counts["runs_finished"] == {("lost", "RUN_LOST"): 1}
    assert victim.counts["runs_active"][()] == 0


async def test_a_failing_round_of_background_work_is_counted_by_task() -> None:
    h = make_harness()

    async def broken(*_: object) -> list[object]:
        raise StorageFailure()

    sup = Supervisor(h.runs, period=0.01)
    await sup.start()
    h.repo.running_runs = broken  # recovery cannot read the store: every round fails
    await asyncio.sleep(0.2)
    await sup.close()
    assert h.metrics.counts["maintenance_failures"][("maintain_once",)] >= 2


async def test_giving_up_on_an_orphan_adopted_too_often_is_counted() -> None:
    w = World()
    metrics = metered(w, "b")
    cid = new_id()
    await w.store.create_conversation(cid, "t", utc_now())
    w.engine.threads[cid] = Thread(work_left=True)
    for _ in range(lifecycle.ADOPTION_ATTEMPTS):  # three adopted runs that never finished
        run = Run(new_id(), cid, RunStatus.RUNNING, utc_now(), owner=OTHER, trigger=RunTrigger.ADOPT)
        await w.store.start_run(run, utc_now())
        await w.store.finish_run(run.id, RunFinish(RunStatus.INTERRUPTED, utc_now()))
    assert await Supervisor(w.b, auto_resume=True).adopt() == []
    assert metrics.counts["adoptions"] == {("gave_up",): 1}
    assert (await w.store.latest_run(cid)).status is RunStatus.FAILED  # type: ignore[union-attr]
