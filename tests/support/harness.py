"""Builds the use cases over in-memory adapters (and a real LangGraph graph), for tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from adapters.langgraph.engine import LangGraphEngine, LangGraphThreads
from adapters.langgraph.graph import AgentNodes, build_graph
from adapters.memory.model import ScriptedModel
from adapters.memory.runs import InMemoryRunRepository
from adapters.memory.toolbox import StaticToolbox, ToolFn
from adapters.system.prompt import FixedPrompt
from domain.conversations import ConversationService
from domain.events import StreamEvent
from domain.hub import RunHub
from domain.model import RunOwner
from domain.runs import RunService, StartedRun
from ports.journal import ToolJournal
from ports.processes import ProcessPort
from ports.runs import RunRepository
from ports.tools import ToolSpec


@dataclass
class FakeProcesses(ProcessPort):
    me: RunOwner = field(default_factory=lambda: RunOwner("test-host", 1000, 1.0))
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
    repo: RunRepository
    saver: BaseCheckpointSaver[Any]
    processes: FakeProcesses
    runs: RunService
    conversations: ConversationService

    async def send(self, message: str, conversation: str | None = None) -> tuple[StartedRun, list[StreamEvent]]:
        started = await self.runs.start(message, conversation)
        return started, await self.follow(started.conversation_id)

    async def resume(self, conversation: str, decision: str | None = None) -> list[StreamEvent]:
        started = await self.runs.start(None, conversation, resume=True, decision=decision)
        return await self.follow(started.conversation_id)

    async def follow(self, cid: str, after: int = 0) -> list[StreamEvent]:
        active = self.runs.active(cid)
        if active is None:
            return []
        return [e for _, e in [item async for item in active.subscribe(after)]]


def make_harness(
    replies: Sequence[Any] = (),
    tools: Sequence[tuple[ToolSpec, ToolFn]] = (),
    repo: RunRepository | None = None,
    saver: BaseCheckpointSaver[Any] | None = None,
    recursion_limit: int = 25,
    delay: float = 0.0,
    processes: FakeProcesses | None = None,
) -> Harness:
    model = ScriptedModel(list(replies), delay=delay)
    toolbox = StaticToolbox(tools)
    repo = repo or InMemoryRunRepository()
    saver = saver or InMemorySaver()
    processes = processes or FakeProcesses()
    journal: ToolJournal | None = repo if hasattr(repo, "call_started") else None  # type: ignore[assignment]
    graph = build_graph(AgentNodes(model, toolbox, FixedPrompt("You are a test."), journal), saver)
    threads = LangGraphThreads(graph)
    runs = RunService(repo, threads, LangGraphEngine(graph), processes, RunHub(), recursion_limit, journal=journal)
    conversations = ConversationService(repo, threads, runs.is_active, journal=journal)
    return Harness(model, toolbox, repo, saver, processes, runs, conversations)
