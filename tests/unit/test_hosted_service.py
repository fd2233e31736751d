"""services.hosted over fakes: a hosted graph's run on the run kernel, its chunks in the run's
events and its outcome recorded (completed, waiting at an interrupt, failed with LangGraph's
`error` chunk); a resume of a graph's thread goes to its graph, never to Sophos's agent."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest

from adapters.memory.runs import InMemoryRunStore
from domain.commands import Resume
from domain.errors import RunNotResumable
from domain.graphs import GraphKind, GraphNotFound, HostedGraph, assistant_id_of
from domain.hosted import GraphChunk, GraphRun, GraphState
from domain.model import RunOwner, RunStatus, new_id, utc_now
from ports.graphs import GraphCatalog, GraphRunner
from services.handles import RunStores
from services.hosted import GraphAwareRuns, HostedRuns
from services.hub import RunHub
from services.runs import RunService
from tests.support.fake_engine import FakeEngine, Thread
from tests.support.harness import FakeProcesses

ME = RunOwner("test-host", 1000, 1.0, "instance-1")


class Catalog(GraphCatalog):
    def __init__(self, *ids: str) -> None:
        self._graphs = tuple(HostedGraph(i, f"./g.py:{i}", GraphKind.COMPILED) for i in ids)

    @property
    def source(self) -> str | None:
        return "/srv/langgraph.json"

    def graphs(self) -> tuple[HostedGraph, ...]:
        return self._graphs

    def get(self, graph_id: str) -> HostedGraph:
        found = next((g for g in self._graphs if g.graph_id == graph_id), None)
        if found is None:
            raise GraphNotFound()
        return found

    def notices(self) -> tuple[str, ...]:
        return ()


class ScriptedGraph(GraphRunner):
    """A graph whose run yields `chunks`, then raises `failure` if any; `waits` is what the
    thread's state says after it (an interrupt left work)."""

    def __init__(self, chunks: Sequence[GraphChunk], failure: Exception | None = None, waits: bool = False) -> None:
        self.chunks, self.failure, self.waits = chunks, failure, waits
        self.runs: list[tuple[GraphRun, str]] = []

    async def stream(self, run: GraphRun, run_id: str, owner: str | None = None) -> AsyncGenerator[GraphChunk, None]:
        self.runs.append((run, run_id))
        for chunk in self.chunks:
            yield chunk
        if self.failure is not None:
            raise self.failure

    async def state(
        self, graph_id: str, thread_id: str, checkpoint_id: str | None = None, *, subgraphs: bool = False
    ) -> GraphState:
        return GraphState({}, ("ask",) if self.waits else ())

    async def history(
        self, graph_id: str, thread_id: str, *, limit: int, before: str | None = None, namespace: str = ""
    ) -> Sequence[GraphState]:
        return []

    async def update_state(
        self, graph_id: str, thread_id: str, values: Any, *, as_node: str | None = None, checkpoint_id: str | None = None
    ) -> str:
        return "c1"

    async def began_at(self, graph_id: str, thread_id: str, run_id: str) -> str | None:
        return None

    async def drawing(self, graph_id: str, *, xray: bool | int = False) -> Mapping[str, Any]:
        return {}

    async def schemas(self, graph_id: str) -> Mapping[str, Any]:
        return {}


async def world(graph: ScriptedGraph, *ids: str) -> tuple[HostedRuns, RunService, InMemoryRunStore, FakeEngine, str]:
    store = InMemoryRunStore()
    engine = FakeEngine(store)
    runs = RunService(RunStores(store, store, store, store, engine), engine, FakeProcesses(me=ME), RunHub(), poll_seconds=0.01)
    cid = new_id()
    await store.create_conversation(cid, "t", utc_now())
    return HostedRuns(runs, lambda: graph, lambda: Catalog(*ids or ("g",))), runs, store, engine, cid


async def finished(runs: RunService, store: InMemoryRunStore, cid: str) -> RunStatus:
    for active in runs.hub.all():
        await active.finished.wait()
    latest = await store.latest_run(cid)
    assert latest is not None
    return latest.status


@pytest.mark.parametrize(
    ("failure", "waits", "status"),
    [(None, False, RunStatus.COMPLETED), (None, True, RunStatus.WAITING), (ValueError("no"), False, RunStatus.FAILED)],
)
async def test_a_hosted_runs_chunks_are_its_events_and_its_outcome_is_recorded(
    failure: Exception | None, waits: bool, status: RunStatus
) -> None:
    graph = ScriptedGraph([GraphChunk("values", {"x": 1}), GraphChunk("updates", {"n": {"x": 1}}, ("sub:1",))], failure, waits)
    hosted, runs, store, _, cid = await world(graph)
    started = await hosted.start(GraphRun("g", cid, input={"x": 0}, stream_modes=("values", "updates")))
    assert await finished(runs, store, cid) is status
    events = [e for _, e in await store.read(started.run_id, 0)]
    chunks = [GraphChunk.of(e) for e in events if GraphChunk.of(e) is not None]
    expected = [GraphChunk("values", {"x": 1}), GraphChunk("updates", {"n": {"x": 1}}, ("sub:1",))]
    if failure is not None:
        expected.append(GraphChunk("error", {"error": "ValueError", "message": "no"}))
    assert chunks == expected
    assert graph.runs == [(GraphRun("g", cid, input={"x": 0}, stream_modes=("values", "updates")), started.run_id)]
    assert (await store.run_kwargs(cid, started.run_id) or {})["graph_id"] == "g"
    assert (await store.thread_metadata([cid]))[cid] == {"graph_id": "g", "assistant_id": assistant_id_of("g")}


async def test_a_resume_of_a_graphs_thread_runs_its_graph_and_never_sophoss_agent() -> None:
    graph = ScriptedGraph([GraphChunk("values", {"x": 1})])
    hosted, runs, store, engine, cid = await world(graph)
    first = await hosted.start(GraphRun("g", cid, input={"x": 0}, config={"configurable": {"k": 1}}))
    await finished(runs, store, cid)
    engine.threads[cid] = Thread(work_left=True, run_id=first.run_id)  # the run's own checkpoint is the thread's last
    aware = GraphAwareRuns(runs, hosted)
    again = await aware.start(Resume(cid))
    await finished(runs, store, cid)
    assert graph.runs[-1] == (
        GraphRun("g", cid, config={"configurable": {"k": 1}}),
        again.run_id,
    )  # input none: from the checkpoint

    # the file no longer serves the graph: nothing runs on the thread, least of all Sophos's
    # agent, even where the agent would see work left in the thread
    engine.threads[cid] = Thread(work_left=True)
    gone = HostedRuns(runs, lambda: graph, lambda: Catalog("other"))
    with pytest.raises(RunNotResumable):
        await GraphAwareRuns(runs, gone).start(Resume(cid))
    assert len(graph.runs) == 2 and engine.writes == []  # the agent never wrote a checkpoint


async def test_a_hosted_run_cut_before_anything_of_it_reached_the_thread_starts_again_as_it_was_asked() -> None:
    graph = ScriptedGraph([GraphChunk("values", {"x": 1})])
    hosted, runs, store, engine, cid = await world(graph)
    asked = GraphRun("g", cid, command={"resume": "yes"}, interrupt_before=("b",), stream_modes=("updates",))
    await hosted.start(GraphRun("g", cid, input={"x": 0}))
    await finished(runs, store, cid)
    earlier = await store.latest_run(cid)
    assert earlier is not None
    engine.threads[cid] = Thread(work_left=True, run_id=earlier.id)  # waits at an interrupt, written by the earlier run
    cut = await hosted.start(asked)
    await finished(runs, store, cid)
    aware = GraphAwareRuns(runs, hosted)
    # the answer never reached the thread (its last checkpoint is the earlier run's): a resume
    # from that checkpoint would lose it and wait again; the run starts again with its command
    again = await aware.start(Resume(cid))
    await finished(runs, store, cid)
    assert graph.runs[-1] == (asked, again.run_id) and again.run_id != cut.run_id

    # a run whose input never reached the thread (INPUT_NOT_RECORDED) is adopted: its input is kept
    row = await store.get_run(again.run_id)
    assert row is not None
    assert await aware.restartable(replace(row, status=RunStatus.INTERRUPTED, error_code="INPUT_NOT_RECORDED"))
    assert not await aware.restartable(replace(row, status=RunStatus.INTERRUPTED))  # resumed from its checkpoint instead
    assert not await runs.restartable(replace(row, status=RunStatus.INTERRUPTED, error_code="INPUT_NOT_RECORDED"))
