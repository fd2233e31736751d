"""Builds the use cases over in-memory adapters (and a real LangGraph graph), for tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from adapters.langgraph.engine import LangGraphEngine, LangGraphThreads
from adapters.langgraph.graph import AgentNodes, build_graph
from adapters.langgraph.saver import Saver
from adapters.memory.metrics import InMemoryMetrics
from adapters.memory.model import ScriptedModel
from adapters.memory.runs import InMemoryRunStore
from adapters.memory.saver import InMemoryThreadSaver
from adapters.memory.toolbox import StaticToolbox, ToolFn
from adapters.system.prompt import FixedPrompt
from domain.commands import start_command
from domain.context import ContextPolicy
from domain.events import StreamEvent
from domain.model import RunOwner
from ports.processes import ProcessPort
from ports.tools import ToolSpec
from services.conversations import ConversationService
from services.handles import RunStores, StartedRun
from services.queueing import QueueService
from services.runs import RunService
from services.supervisor import Supervisor


@dataclass
class FakeProcesses(ProcessPort):
    me: RunOwner = field(default_factory=lambda: RunOwner("test-host", 1000, 1.0, "instance-1"))
    dead: set[int] = field(default_factory=set)

    def current(self) -> RunOwner:
        return self.me

    def is_alive(self, owner: RunOwner) -> bool | None:
        if owner.host != self.me.host:
            return None
        return owner.pid not in self.dead


def spec(name: str, **kw: Any) -> ToolSpec:
    return ToolSpec(name, f"the {name} tool", {"type": "object", "properties": {}}, **kw)


def recording_tool(log: list[tuple[str, dict[str, Any], str]], name: str) -> tuple[ToolSpec, ToolFn]:
    async def fn(args: Any, key: str) -> str:
        log.append((name, dict(args), key))
        return f"{name} ok"

    return spec(name), fn


@dataclass
class Harness:
    model: ScriptedModel
    tools: StaticToolbox
    repo: Any  # InMemoryRunStore or SqliteRunStore: the same four ports
    saver: Saver
    processes: FakeProcesses
    runs: RunService
    conversations: ConversationService
    supervisor: Supervisor
    metrics: InMemoryMetrics
    queue: QueueService

    async def send(self, message: str, conversation: str | None = None) -> tuple[StartedRun, list[StreamEvent]]:
        started = await self.runs.start(start_command(message, conversation))
        return started, await self.events_of(started)

    async def resume(self, conversation: str, decision: str | None = None) -> list[StreamEvent]:
        started = await self.runs.start(start_command(None, conversation, resume=True, decision=decision))
        return await self.events_of(started)

    async def events_of(self, started: StartedRun) -> list[StreamEvent]:
        """Every event of the run, once it has ended: live from this process's memory, or
        from the run event log if it ended first."""
        active = self.runs.hub.by_run(started.run_id)
        if active is not None:
            return [e for _, e in [item async for item in active.subscribe(0)]]
        return [e for _, e in await self.repo.read(started.run_id, 0)]

    async def follow(self, cid: str, after: int = 0) -> list[StreamEvent]:
        answer = await self.runs.follow(cid, after)
        if isinstance(answer, StreamEvent):
            return []
        return [e for _, e in [item async for item in answer]]


def make_harness(
    replies: Sequence[Any] = (),
    tools: Sequence[tuple[ToolSpec, ToolFn]] = (),
    repo: Any = None,
    saver: Saver | None = None,
    recursion_limit: int = 25,
    delay: float = 0.0,
    processes: FakeProcesses | None = None,
    lease_seconds: float = 30.0,
    auto_resume: bool = False,
    context: ContextPolicy | None = None,
) -> Harness:
    model = ScriptedModel(list(replies), delay=delay)
    toolbox = StaticToolbox(tools)
    store = repo or InMemoryRunStore()
    saver = saver or InMemoryThreadSaver()
    processes = processes or FakeProcesses()
    metrics = InMemoryMetrics()
    nodes = AgentNodes(model, toolbox, FixedPrompt("You are a test."), store, context=context, metrics=metrics)
    graph = build_graph(nodes, saver)
    threads = LangGraphThreads(graph, saver)
    stores = RunStores(runs=store, events=store, signals=store, journal=store, checkpoints=threads, queue=store, webhooks=store)
    runs = RunService(
        stores, LangGraphEngine(graph, saver), processes, None, recursion_limit, lease_seconds, cancel_wait=2.0, metrics=metrics
    )
    conversations = ConversationService(store, threads, runs.is_active, store, branches=threads, unsaved=runs.unsaved)
    queue = QueueService(runs, store)
    supervisor = Supervisor(runs, auto_resume)
    return Harness(model, toolbox, store, saver, processes, runs, conversations, supervisor, metrics, queue)
