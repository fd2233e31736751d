"""A second message while a run works (issue 30): the multitasking cases of LangGraph's
Agent Server suite (langgraphjs libs/langgraph-api/tests/api.test.mts: reject, interrupt,
rollback, enqueue), ported to Sophos's own graph and written to Sophos's semantics:
enqueue is durable, interrupt steers at a step boundary, rollback keeps the old turn as a
branch. Over the in-memory store and a real SQLite file."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.memory.saver import InMemoryThreadSaver
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.saver import ThreadedSqliteSaver
from domain.commands import Cancel, start_command
from domain.errors import ModelUnavailable, QueuedNotFound, QueueFull, SessionInProgress
from domain.model import RunOwner, RunStatus, RunTrigger
from domain.queue import QueuedMessage
from services.handles import StartedRun
from services.hub import RunStream
from tests.support.harness import FakeProcesses, Harness, make_harness, spec


@pytest.fixture(params=["memory", "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    if request.param == "memory":
        yield None, InMemoryThreadSaver()
        return
    path = str(tmp_path / "sophos.db")
    store, saver = SqliteRunStore(path), ThreadedSqliteSaver.open(path)
    yield store, saver
    saver.close()
    store.close()


def harness(backend: tuple[Any, Any], replies: list[Any], delay: float = 0.0) -> Harness:
    store, saver = backend
    return make_harness(replies, repo=store, saver=saver, delay=delay)


async def contents(h: Harness, cid: str) -> list[str]:
    return [m.content for m in (await h.conversations.get(cid)).messages]


async def settled(h: Harness, cid: str, timeout: float = 10.0) -> None:
    """Wait until nothing runs on the conversation and its queue is empty."""
    async with asyncio.timeout(timeout):
        while await h.runs.is_active(cid) or await h.queue.waiting(cid):
            await asyncio.sleep(0.02)


async def send(h: Harness, text: str, cid: str | None, multitask: str) -> StartedRun | QueuedMessage:
    return await h.queue.send(start_command(text, cid, multitask=multitask))  # type: ignore[arg-type]


async def test_multitasking_reject(backend: tuple[Any, Any]) -> None:
    h = harness(backend, ["slow first answer here", "unused"], delay=0.05)
    first = await h.runs.start(start_command("foo"))
    cid = first.conversation_id
    with pytest.raises(SessionInProgress):
        await h.runs.start(start_command("foo", cid, multitask="reject"))
    events = await h.events_of(first)
    assert events[-1].data["status"] == "completed"
    assert await contents(h, cid) == ["foo", "slow first answer here"]


async def test_multitasking_enqueue(backend: tuple[Any, Any]) -> None:
    h = harness(backend, ["slow first answer here", "second"], delay=0.05)
    first = await h.runs.start(start_command("foo"))
    cid = first.conversation_id
    queued = await send(h, "bar", cid, "enqueue")
    assert isinstance(queued, QueuedMessage) and queued.text == "bar"
    summary = await h.conversations.summary(cid)
    assert summary.queued == 1 and summary.status is RunStatus.RUNNING
    assert (await h.events_of(first))[-1].data["status"] == "completed"
    await settled(h, cid)
    # both runs succeeded, in order; the second answered "bar" with the first answer in view
    assert await contents(h, cid) == ["foo", "slow first answer here", "bar", "second"]
    assert [m.content for m in h.model.seen[-1].messages] == ["foo", "slow first answer here", "bar"]
    runs = await h.repo.recent_runs(cid, 5)
    assert [(r.status, r.trigger) for r in runs] == [
        (RunStatus.COMPLETED, RunTrigger.QUEUE),
        (RunStatus.COMPLETED, RunTrigger.USER),
    ]
    summary = await h.conversations.summary(cid)
    assert summary.queued == 0 and summary.message_count == 4


async def test_enqueue_on_an_idle_conversation_starts_at_once(backend: tuple[Any, Any]) -> None:
    h = harness(backend, ["one", "two"])
    started, _ = await h.send("foo")
    sent = await send(h, "bar", started.conversation_id, "enqueue")
    assert isinstance(sent, StartedRun)
    assert (await h.events_of(sent))[-1].data["status"] == "completed"
    assert await contents(h, started.conversation_id) == ["foo", "one", "bar", "two"]


async def test_three_queued_messages_are_answered_in_order(backend: tuple[Any, Any]) -> None:
    h = harness(backend, ["slow first answer", "a1", "b1", "c1"], delay=0.03)
    first = await h.runs.start(start_command("foo"))
    cid = first.conversation_id
    for text in ("a", "b", "c"):
        assert isinstance(await send(h, text, cid, "enqueue"), QueuedMessage)
    await settled(h, cid)
    assert await contents(h, cid) == ["foo", "slow first answer", "a", "a1", "b", "b1", "c", "c1"]


async def test_a_failed_run_holds_the_queue_until_a_run_completes(backend: tuple[Any, Any]) -> None:
    # the model fails after a pause with nothing written: "later" is surely queued while the run is active
    h = harness(backend, [("", ModelUnavailable()), "answer", "queued answer"], delay=0.5)
    first = await h.runs.start(start_command("foo"))
    cid = first.conversation_id
    assert isinstance(await send(h, "later", cid, "enqueue"), QueuedMessage)
    assert (await h.events_of(first))[-1].event == "chat-error"
    await asyncio.sleep(0.1)
    await h.supervisor.drain_queues()  # held: a failure does not start the queue
    assert [q.text for q in await h.queue.waiting(cid)] == ["later"]
    assert not await h.runs.is_active(cid)
    resumed = await h.runs.start(start_command(None, cid, resume=True))
    assert (await h.events_of(resumed))[-1].data["status"] == "completed"
    await settled(h, cid)
    assert await contents(h, cid) == ["foo", "answer", "later", "queued answer"]


async def test_a_cancelled_run_holds_the_queue_and_a_queued_message_can_be_dropped(backend: tuple[Any, Any]) -> None:
    h = harness(backend, ["a long answer that will be stopped midway"], delay=0.05)
    first = await h.runs.start(start_command("foo"))
    cid = first.conversation_id
    one = await send(h, "one", cid, "enqueue")
    two = await send(h, "two", cid, "enqueue")
    assert isinstance(one, QueuedMessage) and isinstance(two, QueuedMessage)
    edited = await h.queue.edit(cid, two.id, "deux")
    assert edited.text == "deux"
    await h.runs.cancel(Cancel(cid))
    await h.supervisor.drain_queues()
    assert [q.text for q in await h.queue.waiting(cid)] == ["one", "deux"]
    await h.queue.drop(cid, one.id)
    with pytest.raises(QueuedNotFound):
        await h.queue.drop(cid, one.id)
    assert [q.text for q in await h.queue.waiting(cid)] == ["deux"]


async def test_the_queue_is_bounded(backend: tuple[Any, Any]) -> None:
    h = harness(backend, ["slow answer " * 5], delay=0.05)
    h.queue.max_queued = 2
    first = await h.runs.start(start_command("foo"))
    cid = first.conversation_id
    await send(h, "a", cid, "enqueue")
    await send(h, "b", cid, "enqueue")
    with pytest.raises(QueueFull):
        await send(h, "c", cid, "enqueue")
    await h.runs.cancel(Cancel(cid))


# --- over HTTP -----------------------------------------------------------------------------


def test_enqueue_over_http_answers_with_the_queued_message_and_the_detail_lists_it(client: Any, ollama: Any) -> None:
    ollama.add({"text": "slow " * 30, "token_delay": 0.03}, {"text": "second"})
    cid = client.post("/api/chat", json={"message": "foo"}).json()["conversation"]
    refused = client.post("/api/chat", json={"message": "bar", "conversation": cid})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "SESSION_IN_PROGRESS"
    sent = client.post("/api/chat", json={"message": "bar", "conversation": cid, "multitask": "enqueue"})
    assert sent.status_code == 200, sent.text
    body = sent.json()
    assert set(body) == {"conversation", "queued"} and body["conversation"] == cid
    assert body["queued"]["text"] == "bar" and sent.headers["X-Queued-Id"] == body["queued"]["id"]
    detail = client.get(f"/api/conversations/{cid}").json()
    assert [q["text"] for q in detail["queued"]] == ["bar"] and detail["conversation"]["queued"] == 1
    listed = client.get("/api/conversations").json()["conversations"]
    assert [c.get("queued") for c in listed if c["id"] == cid] == [1]
    edited = client.patch(f"/api/conversations/{cid}/queue/{body['queued']['id']}", json={"message": "baz"})
    assert edited.status_code == 200 and edited.json()["queued"]["text"] == "baz"
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        detail = client.get(f"/api/conversations/{cid}").json()
        if "queued" not in detail and "activeRun" not in detail and detail["conversation"]["messageCount"] == 4:
            break
        time.sleep(0.05)
    assert [m["content"] for m in detail["messages"]][2:] == ["baz", "second"]
    assert "queued" not in detail["conversation"]
    gone = client.delete(f"/api/conversations/{cid}/queue/{body['queued']['id']}")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "QUEUED_NOT_FOUND"


def test_queue_routes_refuse_bad_input_with_the_envelope(client: Any, ollama: Any) -> None:
    ollama.add({"text": "slow " * 40, "token_delay": 0.03})
    cid = client.post("/api/chat", json={"message": "foo"}).json()["conversation"]
    bad = client.post("/api/chat", json={"message": "x", "conversation": cid, "multitask": "later"})
    assert bad.status_code == 400 and "multitask" in bad.json()["error"]["message"]
    bad = client.post("/api/chat", json={"conversation": cid, "resume": True, "multitask": "enqueue"})
    assert bad.status_code == 400
    queued = client.post("/api/chat", json={"message": "q", "conversation": cid, "multitask": "enqueue"}).json()
    qid = queued["queued"]["id"]
    assert client.patch(f"/api/conversations/{cid}/queue/{qid}", json={"message": "  "}).status_code == 400
    assert client.patch(f"/api/conversations/{cid}/queue/{qid}", json={"text": "x"}).status_code == 400
    assert client.patch(f"/api/conversations/{cid}/queue/{qid}", json={"message": "x" * 33_000}).status_code == 400
    assert client.delete(f"/api/conversations/not-a-uuid/queue/{qid}").status_code == 400
    assert client.delete(f"/api/conversations/{cid}/queue/nope").status_code == 404
    client.post("/api/chat/cancel", json={"conversation": cid})


def test_a_full_queue_is_429(make_client: Any, ollama: Any) -> None:
    client = make_client(MAX_QUEUED=2)
    ollama.add({"text": "slow " * 40, "token_delay": 0.03})
    cid = client.post("/api/chat", json={"message": "foo"}).json()["conversation"]
    for text in ("a", "b"):
        assert client.post("/api/chat", json={"message": text, "conversation": cid, "multitask": "enqueue"}).status_code == 200
    full = client.post("/api/chat", json={"message": "c", "conversation": cid, "multitask": "enqueue"})
    assert full.status_code == 429 and full.json()["error"]["code"] == "QUEUE_FULL"
    assert client.delete(f"/api/conversations/{cid}").status_code == 409  # running
    client.post("/api/chat/cancel", json={"conversation": cid})
    assert client.delete(f"/api/conversations/{cid}").status_code == 204  # its held queue with it


# --- durability --------------------------------------------------------------------------


async def test_a_crash_between_the_outcome_and_the_next_start_loses_nothing(tmp_path: Path) -> None:
    """The store starts the next queued message in the transaction that completes the run
    before it; a process that dies right after (its queued run never executed) leaves a
    run that recovery reclaims, the message back at the head of the queue, and any live
    process starts it: answered once."""
    path = str(tmp_path / "sophos.db")
    store, saver = SqliteRunStore(path), ThreadedSqliteSaver.open(path)
    h1 = make_harness(["first answer here"], repo=store, saver=saver, delay=0.03)

    def died(run: Any, message: Any) -> None:  # the process is gone before it executes the queued run
        return None

    h1.runs.launch_queued = died  # type: ignore[method-assign]
    first = await h1.runs.start(start_command("foo"))
    cid = first.conversation_id
    queued = await send(h1, "bar", cid, "enqueue")
    assert isinstance(queued, QueuedMessage)
    await h1.events_of(first)
    orphan = await store.latest_run(cid)
    assert orphan is not None and orphan.status is RunStatus.RUNNING and orphan.trigger is RunTrigger.QUEUE
    assert (await store.claimed(orphan.id)) is not None

    store2, saver2 = SqliteRunStore(path), ThreadedSqliteSaver.open(path)
    try:
        other = FakeProcesses(RunOwner("test-host", 2000, 2.0, "instance-2"), dead={1000})
        h2 = make_harness(["second"], repo=store2, saver=saver2, processes=other)
        assert await h2.supervisor.recover() == 1
        reclaimed = await store2.get_run(orphan.id)
        assert reclaimed is not None and reclaimed.error_code == "INPUT_NOT_RECORDED"
        assert [q.text for q in await h2.queue.waiting(cid)] == ["bar"]
        started = await h2.supervisor.drain_queues()
        assert len(started) == 1
        assert (await h2.events_of(started[0]))[-1].data["status"] == "completed"
        assert await h2.supervisor.drain_queues() == []
        assert await contents(h2, cid) == ["foo", "first answer here", "bar", "second"]
        assert await h2.queue.waiting(cid) == []
    finally:
        saver2.close()
        store2.close()
        saver.close()
        store.close()


# --- following the queue -------------------------------------------------------------------


async def test_a_follower_of_the_queue_gets_each_queued_run_after_the_end_of_the_one_before(backend: tuple[Any, Any]) -> None:
    h = harness(backend, ["slow first answer", "a1", "b1"], delay=0.03)
    first = await h.runs.start(start_command("foo"))
    cid = first.conversation_id
    for text in ("a", "b"):
        await send(h, text, cid, "enqueue")
    stream = await h.runs.follow_batches(cid, 0, None, through_queue=True)
    assert isinstance(stream, RunStream) and stream.chained
    seen: list[tuple[str, int, str]] = []
    async with asyncio.timeout(15):
        async for batch in stream:
            seen += [(stream.run_id, i, e.event) for i, e in batch]
    names = [e for _, _, e in seen]
    assert names.count("end") == 3 and names.count("started") == 2 and names[-1] == "end"
    starts = [i for i, n in enumerate(names) if n == "started"]
    assert all(names[i - 1] == "end" for i in starts)  # each after the end of the run before
    runs = [r for r, _, e in seen if e == "started"]
    assert len(set(runs)) == 2 and first.run_id not in runs
    assert "token" in names
    # a plain follower still ends with the run it follows (the contract's single-run stream)
    assert (await h.follow(cid)) == []


def test_follow_queue_over_http_names_each_run_in_the_event_ids(client: Any, ollama: Any) -> None:
    ollama.add({"text": "slow " * 20, "token_delay": 0.03}, {"text": "second answer"})
    cid = client.post("/api/chat", json={"message": "foo"}).json()["conversation"]
    client.post("/api/chat", json={"message": "bar", "conversation": cid, "multitask": "enqueue"})
    out: list[tuple[str, str, Any]] = []
    with client.stream("GET", f"/api/chat?conversation={cid}&follow=queue") as response:
        block: dict[str, str] = {}
        for line in response.iter_lines():
            if line == "":
                if block and block.get("event") != "ping":
                    out.append((block.get("id", ""), block["event"], json.loads(block["data"])))
                block = {}
                continue
            key, _, value = line.partition(": ")
            block[key] = value
    names = [e for _, e, _ in out]
    assert names.count("end") == 2 and names[-1] == "end"
    started = next((i, d) for i, (_, e, d) in enumerate(out) if e == "started")
    index, data = started
    tag = data["run"].replace("-", "")[:8]
    assert out[index][0] == f"0@{tag}" and data["baseMessageCount"] == 3
    assert all(i.endswith("@" + tag) for i, _, _ in out[index:])
    assert {i.split("@")[1] for i, _, _ in out[:index]} != {tag}


async def test_a_queued_run_killed_after_its_message_was_saved_never_sends_it_twice(tmp_path: Path) -> None:
    """Its message is pending input on the checkpoint before it (the previous run's): the
    reclaim keeps it there and drops it from the queue; a resume answers it once."""
    path = str(tmp_path / "sophos.db")
    store, saver = SqliteRunStore(path), ThreadedSqliteSaver.open(path)
    h1 = make_harness(["first answer here", "never said " * 40], repo=store, saver=saver, delay=0.05)
    first = await h1.runs.start(start_command("foo"))
    cid = first.conversation_id
    await send(h1, "bar", cid, "enqueue")
    await h1.events_of(first)
    queued_run = await store.latest_run(cid)
    assert queued_run is not None and queued_run.trigger is RunTrigger.QUEUE
    active = h1.runs.hub.by_run(queued_run.id)
    assert active is not None
    await active.input_recorded.wait()  # the message is saved; the answer is streaming

    store2, saver2 = SqliteRunStore(path), ThreadedSqliteSaver.open(path)
    try:
        other = FakeProcesses(RunOwner("test-host", 2000, 2.0, "instance-2"), dead={1000})
        h2 = make_harness(["second"], repo=store2, saver=saver2, processes=other)
        assert await h2.supervisor.recover() == 1  # its owner "died"
        await h1.runs.stop_all()  # what is left of it: fenced, it writes nothing more
        assert await h2.queue.waiting(cid) == [] and await store2.claimed(queued_run.id) is None
        assert await h2.supervisor.drain_queues() == []
        resumed = await h2.runs.start(start_command(None, cid, resume=True))
        assert (await h2.events_of(resumed))[-1].data["status"] == "completed"
        assert await contents(h2, cid) == ["foo", "first answer here", "bar", "second"]
    finally:
        saver2.close()
        store2.close()
        saver.close()
        store.close()


# --- interrupt (steer) and rollback ------------------------------------------------------------


def slow_tool(executions: list[str], started: asyncio.Event, seconds: float = 0.3) -> Any:
    async def fn(args: Any, key: str) -> str:
        started.set()
        await asyncio.sleep(seconds)
        executions.append(key)
        return "looked it up"

    return spec("lookup"), fn


async def test_multitasking_interrupt_steers_at_the_next_step_boundary(backend: tuple[Any, Any]) -> None:
    """LangGraph's interrupt cancels the first run mid-step; a steer lets the call in flight
    finish, keeps its result, and the next model call sees the new message."""
    executions: list[str] = []
    started = asyncio.Event()
    store, saver = backend
    h = make_harness(
        [[("lookup", {"q": "x"})], "never asked", "steered answer"],
        tools=[slow_tool(executions, started)],
        repo=store,
        saver=saver,
    )
    first = await h.runs.start(start_command("foo"))
    cid = first.conversation_id
    await started.wait()  # the tool call is in flight
    steered = await send(h, "use the other file", cid, "interrupt")
    assert isinstance(steered, QueuedMessage) and steered.steer
    assert (await h.events_of(first))[-1].data["status"] == "completed"
    await settled(h, cid)
    detail = await h.conversations.get(cid)
    roles = [m.role for m in detail.messages]
    assert roles == ["user", "assistant", "tool", "user", "assistant"]
    assert detail.messages[2].content == "looked it up" and detail.messages[3].content == "use the other file"
    assert detail.messages[4].content == "steered answer"
    assert len(executions) == 1  # the call ran once, its result kept
    assert [m.role for m in h.model.seen[-1].messages] == ["user", "assistant", "tool", "user"]
    assert "never asked" not in [m.content for m in detail.messages]  # its next step was cut at its start
    assert not detail.resumable and not detail.pending_calls


async def first_token(h: Harness, cid: str) -> None:
    active = h.runs.hub.get(cid)
    assert active is not None
    async for _, event in active.subscribe():
        if event.event == "token":
            return


async def test_a_steer_cuts_a_text_answer_at_once_and_keeps_what_it_wrote(backend: tuple[Any, Any]) -> None:
    """A text answer has no step boundary to wait for: the steer stops the model at once, the
    text streamed so far stays as the answer, and the model is asked again with the new
    message right away (not after the 6 s the whole answer would take)."""
    long = " ".join(f"w{i}" for i in range(200))
    h = harness(backend, [long, "steered"], delay=0.03)
    first = await h.runs.start(start_command("foo"))
    cid = first.conversation_id
    await first_token(h, cid)
    asked = time.monotonic()
    await send(h, "actually, this", cid, "interrupt")
    async with asyncio.timeout(10):
        while len(h.model.seen) < 2:
            await asyncio.sleep(0.01)
    took = time.monotonic() - asked
    assert took < 1.0, took
    assert (await h.events_of(first))[-1].data["status"] == "completed"
    await settled(h, cid)
    said = await contents(h, cid)
    assert said[0] == "foo" and said[2:] == ["actually, this", "steered"], said
    assert said[1] and long.startswith(said[1].rstrip()) and len(said[1]) < len(long) / 2, said[1]  # kept, cut short
    assert [m.role for m in h.model.seen[-1].messages] == ["user", "assistant", "user"]
    detail = await h.conversations.get(cid)
    assert not detail.resumable and not detail.pending_calls


async def test_a_steer_before_the_model_wrote_anything_hands_over_at_once(backend: tuple[Any, Any]) -> None:
    """A cold model (no token yet): the steer does not wait for it to load and answer."""
    h = harness(backend, ["a slow first answer", "steered"], delay=2.0)
    first = await h.runs.start(start_command("foo"))
    cid = first.conversation_id
    async with asyncio.timeout(10):
        while not h.model.seen:  # the model is asked, its first token 2 s away
            await asyncio.sleep(0.01)
    await send(h, "actually, this", cid, "interrupt")
    async with asyncio.timeout(1.5):
        while len(h.model.seen) < 2:
            await asyncio.sleep(0.01)
    await settled(h, cid)
    assert await contents(h, cid) == ["foo", "actually, this", "steered"]


async def test_steering_during_a_slow_tool_call_fifty_times_leaves_no_dangling_call() -> None:
    dangling = repeated = 0
    for trial in range(50):
        executions: list[str] = []
        started = asyncio.Event()
        h = make_harness([[("lookup", {"n": trial})], "unused", "ok"], tools=[slow_tool(executions, started, 0.02)])
        first = await h.runs.start(start_command("foo"))
        cid = first.conversation_id
        await started.wait()
        await asyncio.sleep(0.001 * (trial % 20))  # at varying points of the call
        await send(h, "steer", cid, "interrupt")
        await settled(h, cid)
        detail = await h.conversations.get(cid)
        calls = [c.id for m in detail.messages if m.role == "assistant" for c in m.tool_calls]
        results = [m.tool_call_id for m in detail.messages if m.role == "tool"]
        dangling += len(set(calls) - set(results)) + len(detail.pending_calls)
        repeated += len(executions) - len(set(executions)) + (len(executions) != 1)
        assert "steer" in [m.content for m in h.model.seen[-1].messages]
    assert (dangling, repeated) == (0, 0)


# on SQLite only: the in-memory saver keeps no branches, which rollback forks
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_multitasking_rollback_keeps_the_rolled_back_turn_as_a_branch(backend: tuple[Any, Any]) -> None:
    """LangGraph's rollback deletes the first run and its checkpoints; here it is cancelled
    and the new message starts on a new branch forked before its turn: ‹1/2›."""
    h = harness(backend, ["hello", "a slow answer that will be rolled back", "bar answer"], delay=0.05)
    hello, _ = await h.send("hi")
    cid = hello.conversation_id
    first = await h.runs.start(start_command("foo", cid))
    await asyncio.sleep(0.12)  # part of the answer streamed
    rolled = await send(h, "bar", cid, "rollback")
    assert isinstance(rolled, StartedRun)
    assert (await h.events_of(rolled))[-1].data["status"] == "completed"
    old = await h.repo.get_run(first.run_id)
    assert old is not None and old.status is RunStatus.CANCELLED  # kept, not deleted
    detail = await h.conversations.get(cid)
    assert [m.content for m in detail.messages] == ["hi", "hello", "bar", "bar answer"]
    assert detail.markers[2].count == 2  # ‹2/2› at the rolled-back turn
    back = await h.conversations.switch_branch(cid, 1)
    contents_before = [m.content for m in back.messages]
    assert contents_before[:3] == ["hi", "hello", "foo"] and contents_before[3].startswith("a slow")


async def test_rollback_with_nothing_running_just_sends(backend: tuple[Any, Any]) -> None:
    h = harness(backend, ["one", "two"])
    started, _ = await h.send("foo")
    sent = await send(h, "bar", started.conversation_id, "rollback")
    assert isinstance(sent, StartedRun)
    await h.events_of(sent)
    assert await contents(h, started.conversation_id) == ["foo", "one", "bar", "two"]


def test_interrupt_and_rollback_over_http(client: Any, ollama: Any) -> None:
    ollama.add(
        {"text": "slow " * 60, "token_delay": 0.03},
        {"text": "steered"},
        {"text": "slow " * 60, "token_delay": 0.03},
        {"text": "rolled"},
    )
    cid = client.post("/api/chat", json={"message": "foo"}).json()["conversation"]
    with client.stream("GET", f"/api/chat?conversation={cid}") as events:  # until the answer is being written
        next(line for line in events.iter_lines() if line == "event: token")
        sent = client.post("/api/chat", json={"message": "bar", "conversation": cid, "multitask": "interrupt"})
    assert sent.status_code == 200 and sent.json()["queued"]["steer"] is True
    deadline = time.monotonic() + 20
    while client.get(f"/api/conversations/{cid}").json()["conversation"]["messageCount"] < 4:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    client.post("/api/chat", json={"message": "baz", "conversation": cid})
    with client.stream(
        "POST",
        "/api/chat",
        json={"message": "qux", "conversation": cid, "multitask": "rollback"},
        headers={"Accept": "text/event-stream"},
    ) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        body = "".join(response.iter_text())
    assert "event: end" in body and '"status": "completed"' in body
    detail = client.get(f"/api/conversations/{cid}").json()
    said = [m["content"] for m in detail["messages"]]
    assert said[0] == "foo" and said[2:] == ["bar", "steered", "qux", "rolled"], said
    assert said[1].startswith("slow") and len(said[1]) < len("slow " * 60), said  # the steer cut the text answer
    assert detail["messages"][4]["branch"]["count"] == 2
