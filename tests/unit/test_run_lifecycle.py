"""The run lifecycle over in-memory adapters: statuses, titles, counts, events, resume."""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from domain.commands import Cancel, start_command
from domain.errors import (
    ConversationNotFound,
    InvalidInput,
    ModelUnavailable,
    ModelUnreachable,
    NoActiveRun,
    RunNotResumable,
    SessionInProgress,
    ShuttingDown,
)
from domain.events import StreamEvent
from domain.model import AssistantMessage, RunStatus, ToolResult, UserMessage, new_id
from services.hub import ActiveRun
from tests.support.harness import make_harness, recording_tool


def names(events: list[Any]) -> list[str]:
    return [e.event if e.event != "trace" else f"trace:{e.data['event']}:{e.data['node']}" for e in events]


async def test_a_message_completes_a_run_with_tokens_and_an_end_event() -> None:
    h = make_harness(["Hello there friend"])
    started, events = await h.send("  Hi!\nsecond line  ")
    assert names(events) == [
        "trace:enter:agent",
        "trace:context:agent",
        "token",
        "token",
        "token",
        "trace:leave:agent",
        "end",
    ]
    assert "".join(e.data for e in events if e.event == "token") == "Hello there friend"
    assert events[-1].data == {"conversation": started.conversation_id, "status": "completed"}
    conv = await h.conversations.summary(started.conversation_id)
    assert (conv.title, conv.status, conv.message_count) == ("Hi!", RunStatus.COMPLETED, 2)


async def test_the_enter_trace_names_the_model() -> None:
    h = make_harness(["ok"])
    _, events = await h.send("hi")
    assert events[0].data == {"step": 1, "name": "scripted", "node": "agent", "event": "enter"}


async def test_tool_calls_run_once_each_with_a_stable_idempotency_key() -> None:
    log: list[Any] = []
    h = make_harness(
        [[("t__a", {"x": 1}), ("t__b", {})], "All done"],
        tools=[recording_tool(log, "t__a"), recording_tool(log, "t__b")],
    )
    started, events = await h.send("use tools")
    cid = started.conversation_id
    kinds = names(events)
    assert kinds.count("trace:call:tools") == 2 and kinds.count("trace:result:tools") == 2
    assert kinds[-1] == "end"
    detail = await h.conversations.get(cid)
    roles = [m.role for m in detail.messages]
    assert roles == ["user", "assistant", "tool", "tool", "assistant"]
    call_ids = {c.id for c in detail.messages[1].tool_calls}  # type: ignore[union-attr]
    assert sorted(name for name, _, _ in log) == ["t__a", "t__b"]
    assert {key for _, _, key in log} == {f"{cid}:{i}" for i in call_ids}
    assert detail.conversation.message_count == 5 and not detail.resumable


async def test_a_second_turn_sends_the_whole_thread_to_the_model() -> None:
    h = make_harness(["first answer", "second answer"])
    started, _ = await h.send("one")
    await h.send("two", started.conversation_id)
    seen = h.model.seen[-1]
    assert [m.role for m in seen.messages] == ["user", "assistant", "user"]
    assert seen.system == "You are a test."
    # the system prompt is never stored in the thread
    detail = await h.conversations.get(started.conversation_id)
    assert all(m.content != "You are a test." for m in detail.messages)


async def test_a_model_error_fails_the_run_and_leaves_it_resumable() -> None:
    log: list[Any] = []
    h = make_harness([[("t__a", {})], ModelUnavailable(), "recovered"], tools=[recording_tool(log, "t__a")])
    started, events = await h.send("go")
    cid = started.conversation_id
    assert events[-1].event == "chat-error"
    assert events[-1].data == {"code": "MODEL_UNAVAILABLE", "message": ModelUnavailable().message, "conversation": cid}
    detail = await h.conversations.get(cid)
    assert detail.conversation.status is RunStatus.FAILED
    assert detail.conversation.error is not None and detail.conversation.error.code == "MODEL_UNAVAILABLE"
    assert detail.resumable
    events = await h.resume(cid)
    assert events[-1].data["status"] == "completed"
    assert len(log) == 1  # the tool that ran before the failure did not run again
    assert (await h.conversations.get(cid)).messages[-1].content == "recovered"


async def test_the_recursion_limit_fails_the_run_with_its_code() -> None:
    log: list[Any] = []
    h = make_harness([[("t__a", {})]] * 10, tools=[recording_tool(log, "t__a")], recursion_limit=5)
    started, events = await h.send("loop forever")
    assert events[-1].event == "chat-error" and events[-1].data["code"] == "RECURSION_LIMIT"
    assert (await h.conversations.summary(started.conversation_id)).status is RunStatus.FAILED


async def test_a_failing_tool_is_a_tool_message_with_error_status_not_a_failed_run() -> None:
    async def boom(args: Any, key: str) -> str:
        raise RuntimeError("Entity with name X not found")

    from tests.support.harness import spec

    h = make_harness([[("t__boom", {})], "sorry"], tools=[(spec("t__boom"), boom)])
    started, events = await h.send("try")
    assert events[-1].data["status"] == "completed"
    tool = (await h.conversations.get(started.conversation_id)).messages[2]
    assert isinstance(tool, ToolResult) and tool.status == "error" and "not found" in tool.content


@pytest.mark.parametrize(
    ("message", "conversation", "resume", "error", "text"),
    [
        ("   ", None, False, InvalidInput, "Message is required"),
        (None, None, True, InvalidInput, "A conversation is required to resume"),
        ("hi", "../../etc/passwd", False, InvalidInput, "Invalid Conversation ID"),
        ("hi", "", False, InvalidInput, "Invalid Conversation ID"),
        ("hi", 42, False, InvalidInput, "Invalid Conversation ID"),
        ("hi", "11111111-1111-4111-8111-111111111111", False, ConversationNotFound, "Conversation Not Found"),
    ],
)
async def test_bad_starts_are_refused_with_the_contract_messages(
    message: Any, conversation: Any, resume: bool, error: type[Exception], text: str
) -> None:
    h = make_harness()
    with pytest.raises(error, match=text):
        await h.runs.start(start_command(message, conversation, resume))
    assert await h.repo.list_conversations() == [] or conversation is None


async def test_resume_of_a_finished_thread_is_refused() -> None:
    h = make_harness(["ok"])
    started, _ = await h.send("hi")
    with pytest.raises(RunNotResumable):
        await h.runs.start(start_command(None, started.conversation_id, resume=True))


async def test_resume_wins_over_a_message() -> None:
    h = make_harness([ModelUnavailable(), "fine"])
    started, _ = await h.send("hi")
    again = await h.runs.start(start_command("ignored", started.conversation_id, resume=True))
    await h.follow(again.conversation_id)
    users = [m for m in (await h.conversations.get(started.conversation_id)).messages if isinstance(m, UserMessage)]
    assert [u.content for u in users] == ["hi"]


async def test_upper_case_ids_are_accepted_and_stored_lower_case() -> None:
    h = make_harness(["a", "b"])
    started, _ = await h.send("hi")
    again, _ = await h.send("more", started.conversation_id.upper())
    assert again.conversation_id == started.conversation_id


async def test_one_active_run_per_conversation() -> None:
    h = make_harness(["slow " * 20], delay=0.01)
    started = await h.runs.start(start_command("hi"))
    with pytest.raises(SessionInProgress):
        await h.runs.start(start_command("again", started.conversation_id))
    assert not (await h.conversations.get(started.conversation_id)).resumable
    await h.follow(started.conversation_id)
    assert (await h.conversations.summary(started.conversation_id)).status is RunStatus.COMPLETED


async def test_a_late_subscriber_replays_what_it_missed_after_its_last_id() -> None:
    h = make_harness(["one two three four"], delay=0.01)
    started = await h.runs.start(start_command("hi"))
    active = h.runs.hub.get(started.conversation_id)
    assert active is not None
    await asyncio.sleep(0.03)
    seen = [i async for i, _ in active.subscribe(2)]
    assert seen[0] == 3 and seen == list(range(3, 3 + len(seen)))
    assert active.events[-1][1].event == "end" and seen[-1] == active.events[-1][0]


async def test_a_broken_subscriber_never_stops_the_run() -> None:
    h = make_harness(["a b c"], delay=0.01)
    started = await h.runs.start(start_command("hi"))
    active = h.runs.hub.get(started.conversation_id)
    assert active is not None

    class Broken(asyncio.Queue):  # type: ignore[type-arg]
        def put_nowait(self, item: Any) -> None:
            raise RuntimeError("subscriber gone")

    active.subscribers.add(Broken())
    events = await h.follow(started.conversation_id)
    assert events[-1].data["status"] == "completed"


async def test_cancel_stops_the_model_stream_and_records_cancelled() -> None:
    h = make_harness(["word " * 200, "after cancel"], delay=0.01)
    started = await h.runs.start(start_command("long answer please"))
    cid = started.conversation_id
    active = h.runs.hub.get(cid)
    assert active is not None
    await asyncio.sleep(0.05)
    result = await h.runs.cancel(Cancel(cid))
    assert result.run_id == started.run_id and result.status is RunStatus.CANCELLED
    assert active.events[-1][1].data == {"conversation": cid, "status": "cancelled"}
    detail = await h.conversations.get(cid)
    assert detail.conversation.status is RunStatus.CANCELLED and detail.resumable
    with pytest.raises(NoActiveRun):
        await h.runs.cancel(Cancel(cid))
    _, events = await h.send("next message", cid)
    assert events[-1].data["status"] == "completed"


async def test_a_failed_answer_keeps_its_partial_text_and_a_retry_continues_after_it() -> None:
    h = make_harness([("The first half of", ModelUnreachable()), "the second half."])
    started, events = await h.send("tell me")
    cid = started.conversation_id
    assert events[-1].event == "chat-error" and events[-1].data["code"] == "MODEL_UNREACHABLE"
    detail = await h.conversations.get(cid)
    assert [m.content for m in detail.messages] == ["tell me", "The first half of"]
    assert detail.conversation.status is RunStatus.FAILED and detail.resumable
    events = await h.resume(cid)
    assert events[-1].data["status"] == "completed"
    assert [m.content for m in (await h.conversations.get(cid)).messages] == ["tell me", "The first half of", "the second half."]
    assert h.model.seen[-1].messages[-1].content == "The first half of"  # the model went on after it


async def test_a_stopped_answer_stays_in_the_thread_and_a_resume_continues_after_it() -> None:
    h = make_harness(["word " * 200, "the rest"], delay=0.01)
    started = await h.runs.start(start_command("long answer please"))
    cid = started.conversation_id
    await asyncio.sleep(0.2)
    assert (await h.runs.cancel(Cancel(cid))).status is RunStatus.CANCELLED
    detail = await h.conversations.get(cid)
    kept = detail.messages[-1]
    assert [m.role for m in detail.messages] == ["user", "assistant"]
    assert kept.content.startswith("word word") and len(kept.content) < len("word " * 200)
    assert detail.resumable and detail.conversation.message_count == 2
    events = await h.resume(cid)
    assert events[-1].data["status"] == "completed"
    contents = [m.content for m in (await h.conversations.get(cid)).messages]
    assert contents == ["long answer please", kept.content, "the rest"]
    assert h.model.seen[-1].messages[-1].content == kept.content  # the model saw what was kept


async def test_cancel_in_a_slow_tool_closes_the_dangling_call_for_the_next_turn() -> None:
    gate = asyncio.Event()

    async def slow(args: Any, key: str) -> str:
        await gate.wait()
        return "never"

    async def quick(args: Any, key: str) -> str:
        return "quick ok"

    from tests.support.harness import spec

    h = make_harness(
        [[("t__quick", {}), ("t__slow", {})], "fresh answer"],
        tools=[(spec("t__quick"), quick), (spec("t__slow", read_only=True, destructive=False, idempotent=True), slow)],
    )
    started = await h.runs.start(start_command("call both"))
    cid = started.conversation_id
    for _ in range(100):
        await asyncio.sleep(0.01)
        if (await h.conversations.get(cid)).pending_calls and len(h.tools.calls) == 2:
            break
    await h.runs.cancel(Cancel(cid))
    assert (await h.conversations.summary(cid)).status is RunStatus.CANCELLED
    _, events = await h.send("forget it", cid)
    assert events[-1].data["status"] == "completed"
    msgs = (await h.conversations.get(cid)).messages
    tool_results = {m.name: m for m in msgs if isinstance(m, ToolResult)}
    assert tool_results["t__quick"].content == "quick ok"  # the finished call's result is kept
    assert tool_results["t__slow"].status == "error"  # the abandoned call is closed,
    assert tool_results["t__slow"].content.startswith("Outcome unknown")  # and never called "not run"
    seen = h.model.seen[-1].messages
    assert [m.role for m in seen] == ["user", "assistant", "tool", "tool", "user"]


async def test_drain_lets_short_runs_finish_and_interrupts_long_ones() -> None:
    h = make_harness(["word " * 500], delay=0.01)
    started = await h.runs.start(start_command("long"))
    stopped = await h.supervisor.drain(0.05)
    assert stopped == 1
    detail = await h.conversations.get(started.conversation_id)
    assert detail.conversation.status is RunStatus.INTERRUPTED and detail.resumable
    with pytest.raises(ShuttingDown):
        await h.runs.start(start_command("new"))


async def test_drain_waits_for_a_run_that_ends_in_time() -> None:
    h = make_harness(["quick answer"], delay=0.01)
    started = await h.runs.start(start_command("short"))
    assert await h.supervisor.drain(5) == 0
    assert (await h.conversations.summary(started.conversation_id)).status is RunStatus.COMPLETED


async def test_message_count_matches_the_thread_after_each_run() -> None:
    h = make_harness(["a", "b"])
    started, _ = await h.send("1")
    await h.send("2", started.conversation_id)
    detail = await h.conversations.get(started.conversation_id)
    assert detail.conversation.message_count == len(detail.messages) == 4
    assert isinstance(detail.messages[-1], AssistantMessage)


async def test_a_conversation_without_runs_has_no_messages_and_is_not_resumable() -> None:
    h = make_harness()
    cid = new_id()
    await h.repo.create_conversation(cid, "empty", __import__("domain.model").model.utc_now())
    detail = await h.conversations.get(cid)
    assert detail.messages == () and not detail.resumable and detail.conversation.status is None


async def test_a_new_message_is_refused_while_an_unsafe_call_may_have_taken_effect() -> None:
    from domain.errors import DecisionRequired
    from tests.support.harness import spec

    gate = asyncio.Event()

    async def charge(args: Any, key: str) -> str:
        await gate.wait()
        return "charged"

    h = make_harness([[("pay__charge", {})], "skipped it"], tools=[(spec("pay__charge"), charge)])
    started = await h.runs.start(start_command("pay"))
    cid = started.conversation_id
    for _ in range(100):
        await asyncio.sleep(0.01)
        if h.tools.calls:
            break
    await h.runs.cancel(Cancel(cid))
    with pytest.raises(DecisionRequired):
        await h.runs.start(start_command("do something else", cid))
    events = await h.resume(cid, decision="skip")
    assert events[-1].data["status"] == "completed" and len(h.tools.calls) == 1


async def test_events_ready_together_reach_a_subscriber_in_one_batch_and_a_lone_one_at_once() -> None:
    active = ActiveRun(str(uuid.uuid4()), str(uuid.uuid4()))
    batches = active.batches(0)
    first = asyncio.ensure_future(anext(batches))
    await asyncio.sleep(0)  # the subscriber waits
    for text in ("a", "b", "c"):  # published in one step of the run's task
        active.publish(StreamEvent("token", text))
    assert [i for i, _ in await first] == [1, 2, 3]
    lone = asyncio.ensure_future(anext(batches))
    await asyncio.sleep(0)
    active.publish(StreamEvent("token", "d"))
    assert [i for i, _ in await asyncio.wait_for(lone, 1)] == [4]  # not held back for company
    active.publish(StreamEvent("end", {"status": "completed"}))
    active.publish(StreamEvent("token", "after the end"))
    assert [e.event for _, e in await anext(batches)] == ["end"]
    with pytest.raises(StopAsyncIteration):
        await anext(batches)


async def test_a_turn_makes_no_trip_through_the_default_executor() -> None:
    """Every hop to a worker thread costs the loop a wake-up; the graph's own code (nodes,
    the edge after the agent) runs on the loop."""
    hops: list[Any] = []

    class Recording(ThreadPoolExecutor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            hops.append(fn)
            return super().submit(fn, *args, **kwargs)

    loop = asyncio.get_running_loop()
    executor = Recording(max_workers=2)
    loop.set_default_executor(executor)
    h = make_harness(["hello there"])
    started = await h.runs.start(start_command("hi"))
    events = await h.follow(started.conversation_id)
    assert events[-1].data["status"] == "completed"
    assert hops == []
    executor.shutdown(wait=False)
