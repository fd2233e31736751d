"""The agent graph: START -> agent <-> tools -> END, one `tools` task per tool call.

Nodes talk to the outside only through ports (ModelPort, ToolPort, SystemPromptSource) and
report progress through LangGraph's custom stream as domain events.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Send

from adapters.langchain.messages import ConversionCache, to_langchain
from domain.errors import RunLost, StorageFailure, ToolOutcomeUnknown
from domain.events import NodeStarted, TokenDelta, ToolCallFinished, ToolCallRequested
from domain.lifecycle import idempotency_key
from domain.model import AssistantMessage, ToolCall, ToolResult, utc_now
from ports.journal import ToolJournal
from ports.model import ModelPort, TextChunk
from ports.prompts import SystemPromptSource
from ports.tools import ToolPort


class AgentState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


class ToolTask(TypedDict):
    """What one `tools` task receives: a single call of the last assistant turn."""

    call: dict[str, Any]


def _step(config: RunnableConfig) -> int:
    return int((config.get("metadata") or {}).get("langgraph_step", 0))


async def route_after_agent(state: AgentState) -> Sequence[Send] | str:
    # async: LangGraph runs a sync edge function on a worker thread, a hop per model call
    last = state["messages"][-1] if state["messages"] else None
    if isinstance(last, AIMessage) and last.tool_calls:
        return [Send("tools", ToolTask(call=dict(c))) for c in last.tool_calls]
    return END


RUN_KEY = "sophos_run_id"  # in `configurable`, hence in every checkpoint's metadata
SKIP_KEY = "sophos_skip"  # tool call ids not to run again (outcome unknown, user said skip)
SKIPPED = (
    "Skipped: this call was in flight when an earlier run stopped, so it may or may not have "
    "taken effect. The user chose not to run it again."
)


class AgentNodes:
    def __init__(
        self,
        model: ModelPort,
        tools: ToolPort,
        prompt: SystemPromptSource,
        journal: ToolJournal | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.model = model
        self.tools = tools
        self.prompt = prompt
        self.journal = journal
        self.clock = clock
        self.cache = ConversionCache()

    async def agent(self, state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        step, write = _step(config), get_stream_writer()
        write(NodeStarted(step, "agent", self.model.name))
        specs = await self.tools.list_tools()
        system = self.prompt.read()
        reply: AssistantMessage | None = None
        async for out in self.model.stream(system, self.cache.convert(state["messages"]), specs):
            if isinstance(out, TextChunk):
                write(TokenDelta(step, out.text))
            else:
                reply = out
        if reply is None:
            raise RuntimeError("the model ended its stream without a reply")
        for call in reply.tool_calls:
            write(ToolCallRequested(step, call))
        return {"messages": [to_langchain(reply)]}

    async def tool(self, task: ToolTask, config: RunnableConfig) -> dict[str, Any]:
        step, write = _step(config), get_stream_writer()
        raw = task["call"]
        call = ToolCall(raw.get("id") or "", raw["name"], dict(raw.get("args") or {}))
        write(NodeStarted(step, "tools", call.name))
        configurable = config["configurable"]
        if call.id in set(configurable.get(SKIP_KEY) or ()):
            content, failed = SKIPPED, True
        else:
            content, failed = await self._call(call, str(configurable["thread_id"]), configurable.get(RUN_KEY))
        result = ToolResult(content, call.id, call.name, "error" if failed else "success")
        write(ToolCallFinished(step, result))
        message = ToolMessage(content, tool_call_id=call.id, name=call.name, status=result.status)
        return {"messages": [message]}

    async def _call(self, call: ToolCall, thread_id: str, run_id: str | None) -> tuple[str, bool]:
        key = idempotency_key(thread_id, call.id)
        try:
            if self.journal is not None:
                spec = next((t for t in await self.tools.list_tools() if t.name == call.name), None)
                unsafe = spec.unsafe_to_repeat if spec else False
                # durably "about to call": after a crash, this call's outcome is known to be unknown
                await self.journal.call_started(key, thread_id, run_id, call.name, unsafe, self.clock())
            outcome = await self.tools.call(call.name, call.args, key)
            return outcome.content, outcome.is_error
        except (RunLost, StorageFailure, ToolOutcomeUnknown):
            # the run lost its owner or its store: the call must not be sent; or the call's
            # outcome is unknown: the run fails, the call stays pending for a decision
            raise
        except Exception as e:  # a tool's failure is data for the model, not a failed run
            return f"Error: {type(e).__name__}: {e}", True


def build_graph(
    nodes: AgentNodes | None, checkpointer: BaseCheckpointSaver[Any]
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the graph. With `nodes` None the graph can only read state (no model, no
    tools), which is all the read paths need."""

    async def unavailable(*_: Any) -> dict[str, Any]:
        raise RuntimeError("this graph is read-only")

    builder: StateGraph[Any, Any, Any, Any] = StateGraph(AgentState)
    agent: Any = nodes.agent if nodes else unavailable
    tool: Any = nodes.tool if nodes else unavailable
    builder.add_node("agent", agent)
    builder.add_node("tools", tool, input_schema=ToolTask)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route_after_agent, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)
