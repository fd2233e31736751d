"""A LangGraph cron's firing (services.scheduler through services.hosted.fire) over fakes and
a hand-driven clock: the schedule's firing starts a run of its hosted graph with the cron's
own input (never Sophos's agent), once however many processes tick, on a new thread per
firing (deleted when its run ends unless the cron keeps it) or on the cron's thread (a run
going there leaves the firing for the next tick); a graph no longer served is passed over."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from adapters.memory.runs import InMemoryRunStore
from domain.crons import GraphInput, OnCompleted
from domain.hosted import GraphChunk, GraphRun
from domain.model import RunStatus, RunTrigger, new_id, utc_now
from domain.schedules import Schedule, ScheduleSpec, Timing
from services.handles import RunStores
from services.hosted import HostedRuns
from services.hub import RunHub
from services.queueing import QueueService
from services.runs import RunService
from services.scheduler import Scheduler
from tests.support.fake_engine import FakeEngine
from tests.support.harness import FakeProcesses
from tests.unit.test_hosted_service import ME, Catalog, ScriptedGraph

T0 = datetime(2026, 3, 1, 8, 0, 0, tzinfo=UTC)
AT = T0 + timedelta(seconds=1, milliseconds=100)  # a tick just after the first firing (T0 + 1 s)
OWNER = "user-1"


class World:
    def __init__(self, graph: ScriptedGraph, *ids: str) -> None:
        self.store = InMemoryRunStore()
        self.graph = graph
        engine = FakeEngine(self.store)
        stores = RunStores(self.store, self.store, self.store, self.store, engine)
        self.runs = RunService(stores, engine, FakeProcesses(me=ME), RunHub(), poll_seconds=0.01)
        self.hosted = HostedRuns(self.runs, lambda: graph, lambda: Catalog(*ids or ("agent",)))

    def scheduler(self, at: datetime = AT) -> Scheduler:
        return Scheduler(self.runs, QueueService(self.runs, self.store), self.store, clock=lambda: at, hosted=lambda: self.hosted)

    async def cron(self, graph: GraphInput, cid: str | None = None) -> Schedule:
        made = ScheduleSpec(Timing("* * * * * *"), "", cid, graph=graph).schedule(new_id(), OWNER, T0)
        await self.store.put_schedule(made)
        await self.store.tick(T0)  # a process ticked a moment ago: nothing was missed
        return made

    async def settle(self) -> None:
        for active in self.runs.hub.all():
            await active.finished.wait()
        await asyncio.gather(*self.hosted._tasks)


def agent_input(on_completed: OnCompleted | None = OnCompleted.KEEP, graph_id: str = "agent") -> GraphInput:
    return GraphInput(
        graph_id, "a-1", {"value": "init"}, {"configurable": {"k": 1}}, {"c": 1}, {"label": "x"}, on_completed=on_completed
    )


async def test_a_crons_firing_runs_its_graph_with_its_own_input_on_a_new_thread() -> None:
    w = World(ScriptedGraph([GraphChunk("values", {"value": "done"})]))
    s = await w.cron(agent_input())
    assert await w.scheduler().tick() == 1
    await w.settle()
    [firing] = await w.store.firings(s.id, 10)
    [(run, run_id)] = w.graph.runs
    assert run_id == firing.run_id and run.thread_id == firing.conversation_id
    assert (run.graph_id, run.input, dict(run.config), run.context) == (
        "agent",
        {"value": "init"},
        {"configurable": {"k": 1}},
        {"c": 1},
    )
    stored = await w.store.get_run(run_id)
    assert stored is not None and stored.trigger is RunTrigger.SCHEDULE and stored.status is RunStatus.COMPLETED
    assert await w.store.scheduled_times([run_id]) == {run_id: T0 + timedelta(seconds=1)}
    thread = await w.store.get_conversation(run.thread_id)
    assert thread is not None and thread.owner == OWNER  # kept (on_run_completed keep)


async def test_two_processes_ticking_at_once_start_a_crons_firing_once() -> None:
    w = World(ScriptedGraph([]))
    s = await w.cron(agent_input())
    started = await asyncio.gather(w.scheduler().tick(), w.scheduler().tick())
    await w.settle()
    assert sorted(started) == [0, 1] and len(w.graph.runs) == 1 and len(await w.store.firings(s.id, 10)) == 1
    assert len(await w.store.list_conversations()) == 1  # the loser's new thread went with its claim


async def test_a_firing_thread_is_deleted_when_its_run_ends_but_kept_while_it_waits() -> None:
    done = World(ScriptedGraph([]))
    await done.cron(agent_input(on_completed=None))  # a thread-less cron's default: delete
    assert await done.scheduler().tick() == 1
    await done.settle()
    [(run, _)] = done.graph.runs
    assert await done.store.get_conversation(run.thread_id) is None
    waits = World(ScriptedGraph([], waits=True))
    await waits.cron(agent_input(on_completed=OnCompleted.DELETE))
    assert await waits.scheduler().tick() == 1
    await waits.settle()
    [(run, _)] = waits.graph.runs
    assert await waits.store.get_conversation(run.thread_id) is not None  # an interrupt is still to answer


async def test_a_firing_that_meets_a_run_going_on_its_thread_waits_for_the_next_tick() -> None:
    gate = asyncio.Event()

    class Slow(ScriptedGraph):
        async def stream(self, run, run_id, owner=None):  # type: ignore[no-untyped-def]
            self.runs.append((run, run_id))
            await gate.wait()
            yield GraphChunk("values", {})

    w = World(Slow([]))
    cid = new_id()
    await w.store.create_conversation(cid, "t", utc_now(), owner=OWNER)
    s = await w.cron(agent_input(on_completed=None), cid)
    await w.hosted.start(agent_input().run(cid))  # a person's run, going
    assert await w.scheduler().tick() == 0
    stored = await w.store.schedule(s.id)
    assert stored is not None and stored.next_at == T0 + timedelta(seconds=1)  # not passed over
    gate.set()
    await w.settle()
    assert await w.scheduler().tick() == 1
    await w.settle()
    assert [r.thread_id for r, _ in w.graph.runs] == [cid, cid]
    assert await w.store.get_conversation(cid) is not None  # a cron's own thread is never deleted


async def test_a_cron_of_a_graph_no_longer_served_is_passed_over() -> None:
    w = World(ScriptedGraph([]), "other")
    s = await w.cron(agent_input())
    await w.scheduler().tick()
    stored = await w.store.schedule(s.id)
    assert stored is not None and stored.next_at == T0 + timedelta(seconds=2)
    assert not w.graph.runs and await w.store.list_conversations() == []


async def test_a_firings_run_resumed_by_another_process_still_deletes_its_thread() -> None:
    w = World(ScriptedGraph([]))
    cid = new_id()
    await w.store.create_conversation(cid, "t", utc_now(), owner=OWNER)
    kept = replace(agent_input().run(cid), delete_thread=True).kept()  # what the firing's run kept
    resumer = HostedRuns(w.runs, lambda: w.graph, lambda: Catalog("agent"))  # knows nothing of the firing
    await resumer.start(GraphRun.resumed(cid, kept), RunTrigger.ADOPT)
    for active in w.runs.hub.all():
        await active.finished.wait()
    await asyncio.gather(*resumer._tasks)
    assert await w.store.get_conversation(cid) is None
