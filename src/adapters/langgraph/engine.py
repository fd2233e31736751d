"""AgentEngine and CheckpointPort over a compiled LangGraph graph."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphRecursionError
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateSnapshot

from adapters.langchain.messages import to_domain, to_domain_all
from adapters.langgraph.graph import RUN_KEY, SKIP_KEY
from domain.errors import RecursionLimitReached
from domain.events import AgentEvent
from domain.model import CheckpointSummary, PendingCall, ThreadState, ToolCall
from ports.checkpoints import CheckpointPort
from ports.engine import AgentEngine, Resume

log = logging.getLogger(__name__)

Graph = CompiledStateGraph[Any, Any, Any, Any]

ABANDONED = "Not run: the step that requested this call was abandoned for a new message."


def _config(thread_id: str, run_id: str | None = None, limit: int | None = None) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if run_id:
        # copied into every checkpoint's metadata. Not "run_id": LangGraph reads a matching
        # run_id on the latest checkpoint as re-entry into that run and would drop new input
        configurable[RUN_KEY] = run_id
    config: RunnableConfig = {"configurable": configurable}
    if limit is not None:
        config["recursion_limit"] = limit
    return config


def _messages(snapshot: StateSnapshot) -> list[BaseMessage]:
    values = snapshot.values if isinstance(snapshot.values, dict) else {}
    return list(values.get("messages") or [])


def _unanswered(messages: Sequence[BaseMessage], done: set[str]) -> list[ToolCall]:
    """Tool calls of the last assistant turn with no ToolMessage (nor an id in `done`)."""
    answered = set(done)
    for m in reversed(messages):
        if isinstance(m, ToolMessage):
            answered.add(m.tool_call_id)
        elif isinstance(m, AIMessage):
            return [
                ToolCall(c.get("id") or "", c["name"], dict(c.get("args") or {}))
                for c in m.tool_calls
                if c.get("id") not in answered
            ]
        else:
            return []
    return []


def _finished_call_ids(snapshot: StateSnapshot) -> set[str]:
    done: set[str] = set()
    for task in snapshot.tasks:
        result = task.result if isinstance(task.result, dict) else None
        for m in (result or {}).get("messages") or []:
            if isinstance(m, ToolMessage):
                done.add(m.tool_call_id)
    return done


class LangGraphThreads(CheckpointPort):
    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def get_thread(self, thread_id: str) -> ThreadState:
        snap = self.graph.get_state(_config(thread_id))
        checkpoint_id = (snap.config.get("configurable") or {}).get("checkpoint_id")
        if checkpoint_id is None:
            return ThreadState()
        messages = _messages(snap)
        pending: tuple[PendingCall, ...] = ()
        if "tools" in snap.next:
            calls = _unanswered(messages, _finished_call_ids(snap))
            pending = tuple(PendingCall(c) for c in calls)
        run_id = (snap.metadata or {}).get(RUN_KEY)
        return ThreadState(
            messages=to_domain_all(messages),
            next=tuple(snap.next),
            checkpoint_id=checkpoint_id,
            run_id=str(run_id) if run_id else None,
            pending_calls=pending,
        )

    def list_checkpoints(self, thread_id: str) -> Sequence[CheckpointSummary]:
        out: list[CheckpointSummary] = []
        for snap in self.graph.get_state_history(_config(thread_id)):
            messages = _messages(snap)
            meta = snap.metadata or {}
            out.append(
                CheckpointSummary(
                    checkpoint_id=str((snap.config.get("configurable") or {}).get("checkpoint_id")),
                    created_at=snap.created_at or "",
                    step=int(meta.get("step", -1)),
                    source=str(meta.get("source", "")),
                    next=tuple(snap.next),
                    message_count=len(messages),
                    last_message=to_domain(messages[-1]) if messages else None,
                    run_id=str(meta[RUN_KEY]) if meta.get(RUN_KEY) else None,
                )
            )
        out.reverse()
        return out

    def delete_thread(self, thread_id: str) -> None:
        checkpointer = self.graph.checkpointer
        if checkpointer is not None and not isinstance(checkpointer, bool):
            checkpointer.delete_thread(thread_id)


class LangGraphEngine(AgentEngine):
    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    async def _settle(self, config: RunnableConfig) -> list[ToolCall]:
        """Close the abandoned step, if any: keep the results of tool calls that finished,
        drop the tasks still pending. Returns the tool calls left without a result."""
        snap = await self.graph.aget_state(config)
        if snap.next:
            await self.graph.aupdate_state(config, None, as_node=END)
            snap = await self.graph.aget_state(config)
        return _unanswered(_messages(snap), set())

    async def record_input(self, thread_id: str, run_id: str, text: str) -> None:
        config = _config(thread_id, run_id)
        dangling = await self._settle(config)
        closing: list[BaseMessage] = [
            ToolMessage(ABANDONED, tool_call_id=c.id, name=c.name, status="error") for c in dangling
        ]
        update = {"messages": [*closing, HumanMessage(text)]}
        # run the input step only: its checkpoints (input, then next=[agent]) are committed
        # when this returns, so an acknowledged message is never lost
        async for _ in self.graph.astream(update, config, interrupt_before=["agent"], durability="sync"):
            pass

    async def run(
        self, thread_id: str, run_id: str, run_input: Resume, recursion_limit: int
    ) -> AsyncIterator[AgentEvent]:
        config = _config(thread_id, run_id, recursion_limit)
        if run_input.skip:
            config["configurable"][SKIP_KEY] = sorted(run_input.skip)
        try:
            async for event in self.graph.astream(None, config, stream_mode="custom", durability="sync"):
                yield event
        except GraphRecursionError as e:
            raise RecursionLimitReached() from e
