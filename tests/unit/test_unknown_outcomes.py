"""A destructive, non-idempotent call in flight when a run stopped is not re-run blindly."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from domain.commands import Cancel, start_command
from domain.errors import DecisionRequired
from domain.model import ToolResult
from tests.support.harness import Harness, make_harness, spec


def harness_with_a_payment(calls: list[str], gate: asyncio.Event) -> Harness:
    async def charge(args: Any, key: str) -> str:
        calls.append(key)
        await gate.wait()
        return "charged"

    async def lookup(args: Any, key: str) -> str:
        return "looked up"

    return make_harness(
        [[("pay__charge", {"amount": 5}), ("pay__lookup", {})], "after", "after"],
        tools=[
            (spec("pay__charge", destructive=True, idempotent=False), charge),
            (spec("pay__lookup", read_only=True, destructive=False, idempotent=True), lookup),
        ],
    )


async def stop_in_flight(h: Harness, calls: list[str]) -> str:
    started = await h.runs.start(start_command("pay"))
    for _ in range(200):
        await asyncio.sleep(0.01)
        if calls:
            break
    await h.runs.cancel(Cancel(started.conversation_id))
    return started.conversation_id


async def test_resume_pauses_for_a_decision_and_shows_the_call() -> None:
    calls: list[str] = []
    h = harness_with_a_payment(calls, asyncio.Event())
    cid = await stop_in_flight(h, calls)
    detail = await h.conversations.get(cid)
    assert detail.resumable and detail.decision_required
    unknown = [p for p in detail.pending_calls if p.needs_decision]
    assert [p.call.name for p in unknown] == ["pay__charge"]
    with pytest.raises(DecisionRequired):
        await h.runs.start(start_command(None, cid, resume=True))


async def test_skip_records_an_unknown_outcome_and_does_not_call_again() -> None:
    calls: list[str] = []
    h = harness_with_a_payment(calls, asyncio.Event())
    cid = await stop_in_flight(h, calls)
    events = await h.resume(cid, decision="skip")
    assert events[-1].data["status"] == "completed"
    assert len(calls) == 1
    results = {m.name: m for m in (await h.conversations.get(cid)).messages if isinstance(m, ToolResult)}
    assert results["pay__charge"].status == "error" and "may or may not have taken effect" in results["pay__charge"].content
    assert results["pay__lookup"].content == "looked up"


async def test_retry_runs_the_call_again_with_the_same_key() -> None:
    calls: list[str] = []
    gate = asyncio.Event()
    h = harness_with_a_payment(calls, gate)
    cid = await stop_in_flight(h, calls)
    gate.set()
    events = await h.resume(cid, decision="retry")
    assert events[-1].data["status"] == "completed"
    assert len(calls) == 2 and calls[0] == calls[1]
    assert not (await h.conversations.get(cid)).decision_required


async def test_a_safe_tool_in_flight_resumes_without_asking() -> None:
    seen: list[str] = []

    async def slow_read(args: Any, key: str) -> str:
        seen.append(key)
        if len(seen) == 1:
            await asyncio.Event().wait()
        return "read"

    h = make_harness([[("db__read", {})], "done"], tools=[(spec("db__read", read_only=True, destructive=False), slow_read)])
    started = await h.runs.start(start_command("read"))
    for _ in range(200):
        await asyncio.sleep(0.01)
        if seen:
            break
    await h.runs.cancel(Cancel(started.conversation_id))
    assert not (await h.conversations.get(started.conversation_id)).decision_required
    events = await h.resume(started.conversation_id)
    assert events[-1].data["status"] == "completed" and len(seen) == 2
