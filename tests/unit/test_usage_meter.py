"""The usage meter and the daily quota (issue 47 item 3) over in-memory adapters: a server
that reports no counts gives estimated rows, marked; the quota refuses from the limit on,
per UTC day, and resets at the next midnight UTC; the bootstrap admin has none."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from adapters.langgraph.graph import AgentNodes, build_graph
from adapters.memory.model import ScriptedModel
from adapters.memory.runs import InMemoryRunStore
from adapters.memory.saver import InMemoryThreadSaver
from adapters.memory.toolbox import StaticToolbox
from adapters.memory.usage import InMemoryUsageStore
from adapters.system.prompt import FixedPrompt
from domain.context import ContextPolicy
from domain.errors import QuotaExceeded
from domain.principals import BOOTSTRAP_ID
from domain.usage import Cost, reset_at
from services.usage import UsageMeter
from tests.support.harness import recording_tool

NOON = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


async def meter_with_conversation(daily: int = 0) -> tuple[UsageMeter, InMemoryUsageStore, str, list[datetime]]:
    runs, store, now = InMemoryRunStore(), InMemoryUsageStore(), [NOON]
    cid = str(uuid.uuid4())
    await runs.create_conversation(cid, "t", NOON, owner="u_ann")
    return UsageMeter(store, runs, daily, clock=lambda: now[0]), store, cid, now


async def test_a_server_that_reports_no_counts_gives_estimated_rows_marked_so() -> None:
    meter, store, cid, _ = await meter_with_conversation()
    log: list[tuple[str, dict[str, object], str]] = []
    model = ScriptedModel([[("ledger", {})], "all done, and that is the answer"])  # reports no Usage
    nodes = AgentNodes(model, StaticToolbox([recording_tool(log, "ledger")]), FixedPrompt("be brief"), usage=meter)
    graph = build_graph(nodes, InMemoryThreadSaver())
    await graph.ainvoke({"messages": [HumanMessage("hello there")]}, {"configurable": {"thread_id": cid}})
    (row,) = await store.rows("u_ann", NOON.date(), NOON.date())
    assert (row.model, row.calls, row.estimated_calls) == (model.name, 2, 2)
    assert row.input_tokens > 0 and row.output_tokens > 0 and row.tool_seconds > 0 and len(log) == 1


async def test_the_quota_refuses_from_the_limit_on_and_resets_at_midnight_utc() -> None:
    meter, store, cid, now = await meter_with_conversation(daily=100)
    await store.add("u_ann", "m", NOON.date(), Cost(60, 39, 1.0, 0, 1))
    await meter.before_model_call(cid)  # 99 of 100: one more call may start
    await meter.model_call(cid, "m", Cost(30, 30, 1.0, 0, 1))  # that call finishes past the limit
    with pytest.raises(QuotaExceeded) as refused:
        await meter.before_model_call(cid)
    assert refused.value.reset_at == datetime(2026, 3, 2, tzinfo=UTC) == reset_at(NOON)
    with pytest.raises(QuotaExceeded):
        await meter.admit("u_ann")
    now[0] = datetime(2026, 3, 1, 23, 59, 59, tzinfo=UTC)
    with pytest.raises(QuotaExceeded):
        await meter.before_model_call(cid)
    now[0] += timedelta(seconds=1)  # the next UTC day
    await meter.before_model_call(cid)
    await meter.admit(BOOTSTRAP_ID)  # the operator has no quota
    await store.add(BOOTSTRAP_ID, "m", now[0].date(), Cost(10_000, 0, 0, 0, 1))
    await meter.admit(BOOTSTRAP_ID)


async def test_a_day_is_a_utc_day_whatever_the_clocks_zone() -> None:
    east = datetime(2026, 3, 2, 0, 30, tzinfo=UTC).astimezone(ZoneInfo("Asia/Tokyo"))
    assert reset_at(east) == datetime(2026, 3, 3, tzinfo=UTC)


async def test_a_summary_call_is_counted_as_a_model_call_of_its_step() -> None:
    meter, store, cid, _ = await meter_with_conversation()
    model = ScriptedModel(["A SUMMARY.", "the answer"])
    policy = ContextPolicy(window=1024, reserve=256, summaries=True)
    graph = build_graph(AgentNodes(model, StaticToolbox(), FixedPrompt(), context=policy, usage=meter), InMemoryThreadSaver())
    long = "word " * 300  # two such messages no longer fit: the second turn summarizes first
    history = [HumanMessage(f"one {long}"), AIMessage("first answer"), HumanMessage(f"two {long}")]
    await graph.ainvoke({"messages": history}, {"configurable": {"thread_id": cid}})
    assert len(model.seen) == 2
    (row,) = await store.rows("u_ann", NOON.date(), NOON.date())
    assert (row.calls, row.estimated_calls) == (2, 2) and row.input_tokens > 600


async def test_calls_count_against_the_owner_the_conversation_has_at_the_steps_start() -> None:
    meter, store, cid, _ = await meter_with_conversation()
    await meter.before_model_call(cid)
    await meter.model_call(cid, "m", Cost(1, 1, 0, 0, 1))
    assert await meter.runs.give_conversations("u_ann", "u_bob") == 1  # a claim, as from another process
    await meter.before_model_call(cid)
    await meter.model_call(cid, "m", Cost(2, 2, 0, 0, 1))
    assert (await store.tokens("u_ann", NOON.date()), await store.tokens("u_bob", NOON.date())) == (2, 4)
