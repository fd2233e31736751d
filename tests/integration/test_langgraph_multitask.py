"""`multitask_strategy` through LangGraph's official Python SDK against a real `sophos serve`:
the multitasking cases of langgraphjs's API tests (reject, enqueue, interrupt, rollback),
mapped onto Sophos's durable queue. Where Sophos differs on purpose (a steer waits for a
step boundary; a rolled-back run is kept as a branch) the test says so."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.integration.test_langgraph_api import Sophos, human, sophos


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """ "slow": a long answer a token at a time; "append": a tool call that takes 2 s, then
    "done"; anything else is echoed."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return {"text": f"done: {last['content'][:40]}"}
    if "slow" in last["content"]:
        return {"loop": "tick ", "count": 40, "token_delay": 0.05}
    if "append" in last["content"]:
        return {"tool_calls": [("ledger__append", {"label": "steered", "delay": 2.0})]}
    return {"text": f"You said {last['content']!r}."}


@pytest.fixture(scope="module")
def lg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sophos]:
    with sophos(tmp_path_factory.mktemp("lgmulti"), TOOL_APPROVAL="off") as s:
        s.fake.responder = answer
        yield s


def poll(client: SyncLangGraphClient, tid: str, rid: str, timeout: float = 30.0) -> str:
    """The run's status once it is neither pending nor running (as langgraphjs's pollRun)."""
    deadline = time.monotonic() + timeout
    while True:
        status = str(client.runs.get(tid, rid)["status"])
        if status not in ("pending", "running"):
            return status
        assert time.monotonic() < deadline, f"run {rid} still {status}"
        time.sleep(0.1)


def contents(client: SyncLangGraphClient, tid: str) -> list[str]:
    values: Any = client.threads.get_state(tid)["values"]
    return [m["content"] if isinstance(m["content"], str) else json.dumps(m["content"]) for m in values["messages"]]


def busy(client: SyncLangGraphClient, text: str = "please go slow") -> tuple[str, str]:
    """A thread with a slow background run: (thread id, run id), once it runs."""
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "agent", input=human(text))
    return tid, run["run_id"]


def test_reject_refuses_a_second_run_and_the_first_succeeds(lg: Sophos) -> None:
    client = lg.client()
    tid, first = busy(client)
    with pytest.raises(httpx.HTTPStatusError) as e:
        client.runs.create(tid, "agent", input=human("foo"), multitask_strategy="reject")
    assert e.value.response.status_code == 409
    assert poll(client, tid, first) == "success"
    assert [r["run_id"] for r in client.runs.list(tid)] == [first]


def test_enqueue_answers_a_pending_run_that_runs_after_the_first(lg: Sophos) -> None:
    client = lg.client()
    tid, first = busy(client)
    second = client.runs.create(tid, "agent", input=human("bar"), multitask_strategy="enqueue")
    assert second["status"] == "pending" and second["multitask_strategy"] == "enqueue"
    rid = second["run_id"]
    assert client.runs.get(tid, rid)["status"] == "pending"
    assert [r["run_id"] for r in client.runs.list(tid)] == [rid, first]  # newest first
    assert poll(client, tid, first) == "success"
    assert poll(client, tid, rid) == "success"
    assert client.runs.get(tid, rid)["metadata"]["trigger"] == "queue"
    said = contents(client, tid)
    assert len(said) == 4 and said[0] == "please go slow" and said[-2:] == ["bar", "You said 'bar'."]


def test_an_enqueued_stream_waits_for_its_run_and_a_join_gets_its_answer(lg: Sophos) -> None:
    client, other = lg.client(), lg.client()
    tid, first = busy(client)
    events = [
        (p.event, p.data)
        for p in client.runs.stream(
            tid, "agent", input=human("baz"), stream_mode=["values", "messages-tuple"], multitask_strategy="enqueue"
        )
    ]
    assert events[0][0] == "metadata" and events[-1][0] == "end"
    rid = events[0][1]["run_id"]
    assert rid != first and client.runs.get(tid, first)["status"] == "success"
    tokens = "".join(d[0]["content"] for e, d in events if e == "messages")
    assert tokens == "You said 'baz'."
    assert [m["content"] for m in [d for e, d in events if e == "values"][-1]["messages"]][-2:] == ["baz", tokens]
    # a second client's join of a run queued behind another gets that run's end
    tid2, _ = busy(client)
    queued = client.runs.create(tid2, "agent", input=human("qux"), multitask_strategy="enqueue")
    values: Any = other.runs.join(tid2, queued["run_id"])
    assert values["messages"][-1]["content"] == "You said 'qux'."


def test_a_pending_run_cancelled_never_runs(lg: Sophos) -> None:
    client = lg.client()
    tid, first = busy(client)
    second = client.runs.create(tid, "agent", input=human("never"), multitask_strategy="enqueue")
    client.runs.cancel(tid, second["run_id"])
    assert poll(client, tid, first) == "success"
    with pytest.raises(httpx.HTTPStatusError) as e:
        client.runs.get(tid, second["run_id"])
    assert e.value.response.status_code == 404
    assert "never" not in contents(client, tid)


def test_interrupt_steers_the_run_at_its_next_step_boundary(lg: Sophos) -> None:
    """LangGraph cancels the first run at once; Sophos steers: the tool call in flight
    finishes and its result is kept, the model is not called again for it, and the new
    message is answered next (before anything queued earlier)."""
    client = lg.client()
    tid, first = busy(client, "append a line")
    time.sleep(0.5)  # the tool call is in flight
    queued = client.runs.create(tid, "agent", input=human("later"), multitask_strategy="enqueue")
    steer = client.runs.create(tid, "agent", input=human("bar"), multitask_strategy="interrupt")
    assert steer["status"] == "pending"
    assert poll(client, tid, first) == "success"
    assert poll(client, tid, steer["run_id"]) == "success"
    assert poll(client, tid, queued["run_id"]) == "success"
    said = contents(client, tid)
    assert said[0] == "append a line" and said[3:] == ["bar", "You said 'bar'.", "later", "You said 'later'."]
    assert not any(s.startswith("done:") for s in said)  # the steered run asked the model nothing more
    ledger = [json.loads(x) for x in lg.book.read_text().splitlines()]
    assert [e["event"] for e in ledger if e.get("label") == "steered"].count("start") == 1


def test_rollback_cancels_the_run_and_answers_on_a_new_branch(lg: Sophos) -> None:
    """As LangGraph's, the thread then holds only the new turn; unlike it, the rolled-back
    run is kept (`interrupted`), its turn a branch the clients' switchers list."""
    client = lg.client()
    tid, first = busy(client)
    second = client.runs.create(tid, "agent", input=human("bar"), multitask_strategy="rollback")
    assert second["status"] in ("pending", "running", "success")
    assert poll(client, tid, second["run_id"]) == "success"
    assert client.runs.get(tid, first)["status"] == "interrupted"
    assert contents(client, tid) == ["bar", "You said 'bar'."]
    history = client.threads.get_history(tid, limit=100)
    assert any(m["content"] == "please go slow" for h in history for m in h["values"].get("messages", []))


def test_an_unknown_strategy_is_a_400(lg: Sophos) -> None:
    client = lg.client()
    tid = client.threads.create()["thread_id"]
    r = httpx.post(
        f"{lg.lg_url}/threads/{tid}/runs", json={"assistant_id": "agent", "input": human("x"), "multitask_strategy": "later"}
    )
    assert r.status_code == 400 and "multitask_strategy" in r.json()["error"]["message"]


def test_a_run_queued_behind_a_cancelled_one_is_held_and_a_wait_for_it_ends(lg: Sophos) -> None:
    """After a cancel the queue is held (Sophos's rule: a person decides), so the queued run
    stays pending; a stream or a join of it ends at once, saying so, instead of hanging."""
    client = lg.client()
    tid, first = busy(client)
    second = client.runs.create(tid, "agent", input=human("held back"), multitask_strategy="enqueue")
    client.runs.cancel(tid, first, wait=True)
    assert poll(client, tid, first) == "interrupted"
    started = time.monotonic()
    events = [(p.event, p.data) for p in client.runs.join_stream(tid, second["run_id"])]
    assert [e for e, _ in events][-2:] == ["error", "end"] and events[-2][1]["error"] == "QUEUE_HELD"
    values: Any = client.runs.join(tid, second["run_id"])
    assert "held back" not in [m["content"] for m in values["messages"]]
    assert time.monotonic() - started < 10
    assert client.runs.get(tid, second["run_id"])["status"] == "pending"
    client.runs.cancel(tid, second["run_id"])
    with pytest.raises(httpx.HTTPStatusError):
        client.runs.get(tid, second["run_id"])
