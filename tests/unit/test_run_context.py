"""A run's own values (its model choice, the calls not to run again) reach the graph's nodes
as LangGraph's run context (`Runtime.context`, the graph's `context_schema`), not through
`configurable`."""

from __future__ import annotations

import uuid

from langchain_core.messages import HumanMessage

from adapters.langgraph.graph import AgentNodes, build_graph
from adapters.langgraph.keys import RunContext
from adapters.memory.model import ScriptedModel
from adapters.memory.saver import InMemoryThreadSaver
from adapters.memory.toolbox import StaticToolbox
from adapters.system.prompt import FixedPrompt
from domain.events import ToolCallFinished
from domain.model import SystemMode
from domain.models import ModelChoice
from tests.support.harness import recording_tool


async def test_the_agent_node_answers_with_the_model_and_system_prompt_of_the_run_context() -> None:
    model = ScriptedModel(["hello"])
    graph = build_graph(AgentNodes(model, StaticToolbox(), FixedPrompt("the default")), InMemoryThreadSaver())
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    context = RunContext("run-1", ModelChoice("picked", "its own prompt"))
    async for _ in graph.astream({"messages": [HumanMessage("hi")]}, config, context=context, stream_mode="custom"):
        pass
    # its own instructions follow the server's prompt (the tool guidance stays) unless they replace it
    assert [(s.model, s.system) for s in model.seen] == [("picked", "the default\n\nits own prompt")]
    replacing = RunContext("run-2", ModelChoice("picked", "its own prompt", system_mode=SystemMode.REPLACE))
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    model.replies.append("again")
    async for _ in graph.astream({"messages": [HumanMessage("hi")]}, config, context=replacing, stream_mode="custom"):
        pass
    assert (model.seen[-1].model, model.seen[-1].system) == ("picked", "its own prompt")


async def test_without_a_run_context_the_node_uses_the_defaults() -> None:
    model = ScriptedModel(["hello"])
    graph = build_graph(AgentNodes(model, StaticToolbox(), FixedPrompt("the default")), InMemoryThreadSaver())
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    async for _ in graph.astream({"messages": [HumanMessage("hi")]}, config, stream_mode="custom"):
        pass
    assert [(s.model, s.system) for s in model.seen] == [(None, "the default")]


async def test_a_call_the_run_context_skips_is_not_run() -> None:
    log: list[tuple[str, dict[str, object], str]] = []
    model = ScriptedModel([[("ledger", {})], "done"])
    nodes = AgentNodes(model, StaticToolbox([recording_tool(log, "ledger")]), FixedPrompt())
    saver = InMemoryThreadSaver()
    graph = build_graph(nodes, saver)
    thread = str(uuid.uuid4())
    config = {"configurable": {"thread_id": thread}}
    # the first run stops before its tools step, as a crash would leave it
    await graph.ainvoke({"messages": [HumanMessage("hi")]}, config, interrupt_before=["tools"])
    (call_id,) = [c["id"] for c in (await graph.aget_state(config)).values["messages"][-1].tool_calls]
    events = [
        e async for e in graph.astream(None, config, context=RunContext("run-2", skip=frozenset({call_id})), stream_mode="custom")
    ]
    assert log == []
    assert [e.result.skipped for e in events if isinstance(e, ToolCallFinished)] == [True]
