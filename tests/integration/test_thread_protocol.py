"""LangGraph's thread protocol on a real `sophos serve` hosting a person's graphs (issue 44),
for what langgraph-sdk's own suite does not try: two websocket clients on one thread (one
starts the run, the other answers its interrupt, once), what a websocket peer may send and
who may open one, and a thread's event stream resumed after kill -9 of the server, where
AUTO_RESUME's run goes on with the stream's `since` cursor."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from tests.integration.test_hosted_graphs import executions, hosting, serving, wait_for

Message = dict[str, Any]


def socket_url(client: Any, tid: str) -> str:
    base = str(client.http.client.base_url).replace("http://", "ws://").rstrip("/")
    return f"{base}/threads/{tid}/stream/events"


def until(ws: ClientConnection, wanted: Callable[[Message], bool], timeout: float = 20) -> list[Message]:
    """The messages read from `ws` up to the first one `wanted` takes (included)."""
    seen: list[Message] = []
    deadline = time.monotonic() + timeout
    while True:
        message = json.loads(ws.recv(timeout=max(0.0, deadline - time.monotonic())))
        seen.append(message)
        if wanted(message):
            return seen


def answer_to(command_id: int) -> Callable[[Message], bool]:
    return lambda m: m.get("type") in ("success", "error") and m.get("id") == command_id


def lifecycle(event: str) -> Callable[[Message], bool]:
    return lambda m: m.get("method") == "lifecycle" and m["params"]["namespace"] == [] and m["params"]["data"]["event"] == event


def test_two_websocket_clients_share_a_thread_one_starts_its_run_the_other_answers_its_interrupt_once(tmp_path: Path) -> None:
    with hosting(tmp_path) as (_, client, log):
        tid = client.threads.create()["thread_id"]
        url = socket_url(client, tid)
        with connect(url) as a, connect(url) as b:
            for ws in (a, b):
                ws.send(
                    json.dumps(
                        {"id": 1, "method": "subscription.subscribe", "params": {"channels": ["lifecycle", "input", "values"]}}
                    )
                )
                assert until(ws, answer_to(1))[-1]["type"] == "success"
            a.send(json.dumps({"id": 2, "method": "run.start", "params": {"assistant_id": "asker", "input": {"items": []}}}))
            run_id = until(a, answer_to(2))[-1]["result"]["run_id"]
            asked = [m for m in until(b, lifecycle("interrupted")) if m.get("method") == "input.requested"]
            assert [m["params"]["data"]["payload"] for m in asked] == ["ok?"]
            interrupt_id = asked[0]["params"]["data"]["interrupt_id"]
            respond = {"interrupt_id": interrupt_id, "namespace": [], "response": "yes"}
            b.send(json.dumps({"id": 3, "method": "input.respond", "params": respond}))
            resumed = until(b, answer_to(3))[-1]
            assert resumed["type"] == "success" and resumed["result"]["run_id"] != run_id
            for ws in (a, b):  # both see the resumed run end, with the answer in its values
                seen = until(ws, lifecycle("completed"))
                assert [m for m in seen if m.get("method") == "values"][-1]["params"]["data"] == {
                    "items": ["first", "answer:yes"]
                }
            # the same answer again: that interrupt no longer waits, nothing runs
            a.send(json.dumps({"id": 4, "method": "input.respond", "params": respond}))
            assert until(a, answer_to(4))[-1]["error"] == "no_such_interrupt"
        assert executions(log) == ["first", "ask", "ask", "answered:yes"]
        assert client.threads.get_state(tid)["values"] == {"items": ["first", "answer:yes"]}


def test_a_websocket_peer_gets_clear_refusals_and_is_bounded_in_size_and_rate(tmp_path: Path) -> None:
    with hosting(tmp_path) as (_, client, _log):
        tid = client.threads.create()["thread_id"]
        url = socket_url(client, tid)
        with connect(url) as ws:
            ws.send("{not json")
            assert until(ws, lambda m: True)[-1] == {
                "type": "error",
                "id": None,
                "error": "invalid_argument",
                "message": "Protocol commands must be valid JSON.",
            }
            for sent, error in [
                ({"id": 7}, "invalid_argument"),
                ({"id": 8, "method": "state.fork"}, "unknown_command"),
                ({"id": 9, "method": "subscription.subscribe", "params": {"channels": ["nope"]}}, "invalid_argument"),
                ({"id": 10, "method": "run.start", "params": {"assistant_id": "nobody"}}, "invalid_argument"),
                ({"id": 11, "method": "input.respond", "params": {"interrupt_id": "none"}}, "no_such_run"),  # it ran no graph
            ]:
                ws.send(json.dumps(sent))
                assert until(ws, lambda m: True)[-1] | {"message": ""} == {
                    "type": "error",
                    "id": sent["id"],
                    "error": error,
                    "message": "",
                }
        with connect(url) as ws, pytest.raises(ConnectionClosed) as big:
            ws.send(json.dumps({"id": 1, "method": "run.start", "params": {"input": "x" * 70_000}}))
            ws.recv(timeout=10)
        assert big.value.rcvd is not None and big.value.rcvd.code == 1009
        with connect(url) as ws, pytest.raises(ConnectionClosed) as flood:
            for i in range(200):
                ws.send(json.dumps({"id": i, "method": "state.fork"}))
            while True:
                ws.recv(timeout=10)
        assert flood.value.rcvd is not None and flood.value.rcvd.code == 1008
        with pytest.raises(InvalidStatus):  # a thread no one has
            connect(url.replace(tid, "00000000-0000-4000-8000-000000000000")).close()
        with pytest.raises(InvalidStatus):  # a page of another origin: a write it may not make
            connect(url, origin="http://evil.example").close()  # type: ignore[arg-type]


def test_a_websocket_needs_the_api_token_as_every_route_does(tmp_path: Path) -> None:
    token = "t" * 32
    with serving(tmp_path, API_TOKEN=token) as (_, client):
        base = str(client.http.client.base_url).rstrip("/")
        tid = httpx.post(f"{base}/threads", json={}, headers={"X-Api-Key": token}).json()["thread_id"]
        url = f"{base.replace('http://', 'ws://')}/threads/{tid}/stream/events"
        with pytest.raises(InvalidStatus):
            connect(url).close()
        with connect(url, additional_headers={"X-Api-Key": token}) as ws:
            ws.send(json.dumps({"id": 1, "method": "subscription.subscribe", "params": {"channels": ["values"]}}))
            assert until(ws, answer_to(1))[-1]["type"] == "success"


def sse_events(response: httpx.Response) -> Iterator[Message]:
    """The protocol events of an SSE response (its `data:` lines), as they come."""
    for line in response.iter_lines():
        if line.startswith("data: "):
            yield json.loads(line[len("data: ") :])


def test_a_thread_s_event_stream_spans_its_runs_and_ends_when_the_thread_is_deleted(tmp_path: Path) -> None:
    with hosting(tmp_path) as (_, client, _log):
        base = str(client.http.client.base_url).rstrip("/")
        tid = client.threads.create()["thread_id"]
        said: list[Any] = []
        with httpx.stream(
            "POST", f"{base}/threads/{tid}/stream/events", json={"channels": ["lifecycle"]}, timeout=20
        ) as response:
            events = sse_events(response)
            for run in range(2):  # one stream, two runs: each said as it starts and ends
                start = {"id": run, "method": "run.start", "params": {"assistant_id": "asker", "input": {"items": []}}}
                if run:
                    start["params"] = {"assistant_id": "failing", "input": {"items": []}}
                assert httpx.post(f"{base}/threads/{tid}/commands", json=start).json()["type"] == "success"
                for event in events:
                    said.append((event["params"]["data"]["event"], event["seq"] >> 32))
                    if event["params"]["data"]["event"] != "running":
                        break
            client.threads.delete(tid)
            assert list(events) == [None]  # the stream's `end`, then it closes
        assert said == [("running", 0), ("interrupted", 0), ("running", 1), ("failed", 1)]


def test_another_process_streams_a_protocol_run_from_the_event_log_and_its_answer_resumes_it(tmp_path: Path) -> None:
    with hosting(tmp_path) as (_, a, log), serving(tmp_path) as (_, b):  # two servers, one SQLite file
        a_base, b_base = (str(c.http.client.base_url).rstrip("/") for c in (a, b))
        tid = a.threads.create()["thread_id"]
        start = {"id": 1, "method": "run.start", "params": {"assistant_id": "slower", "input": {"items": []}}}
        assert httpx.post(f"{a_base}/threads/{tid}/commands", json=start).json()["type"] == "success"
        wait_for(lambda: "slow" in executions(log), "the slow node")
        body = {"channels": ["values", "lifecycle"]}
        with httpx.stream("POST", f"{b_base}/threads/{tid}/stream/events", json=body, timeout=20) as response:
            events = sse_events(response)
            values = (e["params"]["data"] for e in events if e["method"] == "values")
            assert [next(values), next(values)] == [{"items": []}, {"items": ["first"]}]  # A's run, read by B from the log
            (tmp_path / "gate").touch()
            seen = []
            for event in events:
                seen.append(event)
                if lifecycle("completed")(event):
                    break
        assert [e["params"]["data"] for e in seen if e["method"] == "values"][-1] == {"items": ["first", "slow"]}
        # B answers an interrupt of a run A executed: the resume runs once, on B
        ask = {"id": 2, "method": "run.start", "params": {"assistant_id": "asker", "input": {"items": []}}}
        assert httpx.post(f"{a_base}/threads/{tid}/commands", json=ask).json()["type"] == "success"
        wait_for(lambda: a.threads.get(tid)["status"] == "interrupted", "the interrupt")
        interrupt_id = a.threads.get_state(tid)["interrupts"][0]["id"]
        respond = {"id": 3, "method": "input.respond", "params": {"interrupt_id": interrupt_id, "response": "yes"}}
        assert httpx.post(f"{b_base}/threads/{tid}/commands", json=respond).json()["type"] == "success"
        wait_for(lambda: a.threads.get(tid)["status"] == "idle", "the resumed run")
        assert executions(log).count("answered:yes") == 1


def test_a_thread_s_event_stream_resumes_after_kill_9_with_the_run_auto_resume_started(tmp_path: Path) -> None:
    with hosting(tmp_path, AUTO_RESUME="true") as (server, client, log):
        base = str(client.http.client.base_url).rstrip("/")
        tid = client.threads.create()["thread_id"]
        start = {"id": 1, "method": "run.start", "params": {"assistant_id": "slower", "input": {"items": []}}}
        assert httpx.post(f"{base}/threads/{tid}/commands", json=start).json()["type"] == "success"
        body = {"channels": ["values", "lifecycle"]}
        last: Message = {}
        with httpx.stream("POST", f"{base}/threads/{tid}/stream/events", json=body, timeout=20) as response:
            for event in sse_events(response):
                last = event
                if event["method"] == "values" and event["params"]["data"] == {"items": ["first"]}:
                    break
        wait_for(lambda: "slow" in executions(log), "the slow node")
        server.kill()
        (tmp_path / "gate").touch()
        server.start()
        seen: list[Message] = []
        with httpx.stream(
            "POST", f"{base}/threads/{tid}/stream/events", json={**body, "since": last["seq"]}, timeout=20
        ) as response:
            for event in sse_events(response):
                seen.append(event)
                if lifecycle("completed")(event):
                    break
        assert all(e["seq"] > last["seq"] for e in seen)  # nothing the client saw comes again
        said = [
            (e["method"], e["params"]["data"].get("event") if e["method"] == "lifecycle" else e["params"]["data"]) for e in seen
        ]
        # the cut run ends as a crash ends it, then the run AUTO_RESUME started goes on from its checkpoint
        assert said[0] == ("lifecycle", "interrupted")
        assert said[-2:] == [("values", {"items": ["first", "slow"]}), ("lifecycle", "completed")]
        assert executions(log) == ["first", "slow", "slow"]
