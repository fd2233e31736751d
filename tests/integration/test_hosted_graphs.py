"""A person's own LangGraph graphs (a `langgraph.json`) served by a real `sophos serve` on its
LangGraph API, driven by the pinned langgraph-sdk (issue 44): a run is a Sophos run (its
stream, join and re-join, its state, history and update_state through the graph), an
`interrupt()` in the person's node resumes once with `command.resume`, a failing node is
LangGraph's `error` event, and a run cut by kill -9 of the server is resumed with its own
graph from the last checkpoint (AUTO_RESUME, SQLite)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.support.app import app_env
from tests.support.server import LiveServer, free_port

GRAPHS = """
import os, time, operator
from typing import Annotated
from typing_extensions import TypedDict
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


def mark(what):  # every execution of a node, in order: what the test counts
    with open(os.environ["HOSTED_TEST_LOG"], "a") as log:
        log.write(what + "\\n")


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def first(state):
    mark("first")
    get_stream_writer()({"node": "first"})
    return {"items": ["first"]}


def ask(state):
    mark("ask")
    answer = interrupt("ok?")
    mark(f"answered:{answer}")
    return {"items": [f"answer:{answer}"]}


def slow(state):  # holds until the test opens the gate: the server is killed meanwhile
    mark("slow")
    gate = os.environ["HOSTED_TEST_GATE"]
    while not os.path.exists(gate):
        time.sleep(0.01)
    return {"items": ["slow"]}


def fail(state):
    raise ValueError("the node failed on purpose")


def build(*nodes):
    builder = StateGraph(State)
    previous = START
    for node in nodes:
        builder.add_node(node.__name__, node)
        builder.add_edge(previous, node.__name__)
        previous = node.__name__
    builder.add_edge(previous, END)
    return builder.compile()


asker = build(first, ask)
slower = build(first, slow)
failing = build(first, fail)
"""


def graphs_file(tmp_path: Path) -> Path:
    """GRAPHS (asker, slower, failing) in a langgraph.json under tmp_path."""
    (tmp_path / "graphs").mkdir(exist_ok=True)
    (tmp_path / "graphs" / "nodes.py").write_text(GRAPHS)
    config = tmp_path / "langgraph.json"
    env = {"HOSTED_TEST_LOG": str(tmp_path / "nodes.log"), "HOSTED_TEST_GATE": str(tmp_path / "gate")}
    graphs = {name: f"./graphs/nodes.py:{name}" for name in ("asker", "slower", "failing")}
    config.write_text(json.dumps({"graphs": graphs, "env": env}))
    return config


@contextmanager
def serving(tmp_path: Path, **env: str) -> Iterator[tuple[LiveServer, SyncLangGraphClient]]:
    """A `sophos serve` on tmp_path's database hosting GRAPHS, and an SDK client of it."""
    lg_port = free_port()
    settings = {"LANGGRAPH_JSON": str(graphs_file(tmp_path)), "LANGGRAPH_API_PORT": str(lg_port), "MODEL_BACKEND": "demo", **env}
    server = LiveServer(app_env(tmp_path, TOOLS_BACKEND="none", **settings), tmp_path).start()
    try:
        wait_for(lambda: httpx.get(f"http://127.0.0.1:{lg_port}/ok").status_code == 200, "the LangGraph API")
        yield server, get_sync_client(url=f"http://127.0.0.1:{lg_port}")
    finally:
        server.stop()


@contextmanager
def hosting(tmp_path: Path, **env: str) -> Iterator[tuple[LiveServer, SyncLangGraphClient, Path]]:
    """`sophos serve` hosting GRAPHS; the node log's path."""
    with serving(tmp_path, **env) as (server, client):
        yield server, client, tmp_path / "nodes.log"


def wait_for(condition: Any, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except (httpx.HTTPError, OSError):
            pass
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def executions(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def test_an_interrupt_in_a_users_node_waits_and_resumes_once_with_command_resume(tmp_path: Path) -> None:
    with hosting(tmp_path) as (_, client, log):
        assert [a["graph_id"] for a in client.assistants.search()] == ["asker", "slower", "failing", "agent"]
        tid = client.threads.create()["thread_id"]
        parts = [
            (p.event, p.data) for p in client.runs.stream(tid, "asker", input={"items": []}, stream_mode=["updates", "custom"])
        ]
        assert ("custom", {"node": "first"}) in parts
        assert ("updates", {"first": {"items": ["first"]}}) in parts
        interrupts = [d["__interrupt__"] for e, d in parts if e == "updates" and "__interrupt__" in d]
        assert [i["value"] for i in interrupts[0]] == ["ok?"]
        thread = client.threads.get(tid)
        assert thread["status"] == "interrupted" and thread["metadata"]["graph_id"] == "asker"
        state = client.threads.get_state(tid)
        assert state["next"] == ["ask"] and state["values"] == {"items": ["first"]}
        assert [i["value"] for i in state["tasks"][0]["interrupts"]] == ["ok?"]

        done = client.runs.wait(tid, "asker", command={"resume": "yes"})
        assert done == {"items": ["first", "answer:yes"]}
        # the node ran again from its start when resumed (LangGraph's rule), its side effect after interrupt() once
        assert executions(log) == ["first", "ask", "ask", "answered:yes"]
        assert client.threads.get(tid)["status"] == "idle"
        assert client.threads.get_state(tid)["next"] == []

        with pytest.raises(httpx.HTTPStatusError) as refused:  # Sophos's agent never runs on a graph's state
            client.runs.wait(tid, "agent", input={"messages": [{"type": "human", "content": "hi"}]})
        assert refused.value.response.status_code == 400

        stateless = client.runs.wait(None, "asker", input={"items": []})  # a new thread of its own
        assert [i["value"] for i in stateless["__interrupt__"]] == ["ok?"] and stateless["items"] == ["first"]


def test_a_hosted_thread_has_history_update_state_and_a_join_in_the_runs_own_modes(tmp_path: Path) -> None:
    with hosting(tmp_path) as (_, client, log):
        tid = client.threads.create()["thread_id"]
        run = client.runs.create(tid, "asker", input={"items": []}, stream_mode=["updates"], interrupt_before=["ask"])
        # a second client's join names no mode: it gets the run's own
        parts = list(client.runs.join_stream(tid, run["run_id"]))
        joined = [(p.event, p.data) for p in parts]
        assert [e for e, _ in joined] == ["metadata", "updates", "updates", "end"]
        assert joined[1][1] == {"first": {"items": ["first"]}}
        # a re-join after the first update's id gets the rest, nothing twice (another process reads the event log alike)
        rest = list(client.runs.join_stream(tid, run["run_id"], last_event_id=parts[1].id))
        assert [(p.event, p.data) for p in rest] == joined[2:]
        assert "ask" not in executions(log)  # stopped before the node
        assert client.threads.get_state(tid)["next"] == ["ask"]

        # written as if `ask` had answered: the graph goes past it
        client.threads.update_state(tid, {"items": ["by hand"]}, as_node="ask")
        state = client.threads.get_state(tid)
        assert state["values"] == {"items": ["first", "by hand"]} and state["next"] == []
        history = client.threads.get_history(tid, limit=10)
        assert history[0]["values"] == state["values"]
        assert history[0]["parent_checkpoint"]["checkpoint_id"] == history[1]["checkpoint"]["checkpoint_id"]
        assert [h["metadata"]["source"] for h in history][:2] == ["update", "loop"]
        older = history[1]["checkpoint"]["checkpoint_id"]
        assert client.threads.get_state(tid, checkpoint_id=older)["values"] == {"items": ["first"]}

        # a checkpoint the thread does not have is 404, never an empty state or a run from nothing
        unknown = "1f000000-0000-6000-8000-000000000000"
        for call in (
            lambda: client.threads.get_state(tid, checkpoint_id=unknown),
            lambda: client.runs.wait(tid, "asker", input={"items": []}, checkpoint_id=unknown),
        ):
            with pytest.raises(httpx.HTTPStatusError) as missing:
                call()
            assert missing.value.response.status_code == 404


def test_a_failing_node_ends_its_run_with_langgraphs_error_event(tmp_path: Path) -> None:
    with hosting(tmp_path) as (_, client, _):
        tid = client.threads.create()["thread_id"]
        parts = [(p.event, p.data) for p in client.runs.stream(tid, "failing", input={"items": []})]
        assert parts[-2] == ("error", {"error": "ValueError", "message": "the node failed on purpose"})
        assert parts[-1][0] == "end"
        assert [r["status"] for r in client.runs.list(tid)] == ["error"]
        assert client.threads.get_state(tid)["values"] == {"items": ["first"]}  # its step before the failure stays


def test_a_second_run_on_a_busy_hosted_thread_is_refused_or_interrupts_it(tmp_path: Path) -> None:
    with hosting(tmp_path) as (_, client, log):
        tid = client.threads.create()["thread_id"]
        first = client.runs.create(tid, "slower", input={"items": []})
        wait_for(lambda: "slow" in executions(log), "the slow node")
        with pytest.raises(httpx.HTTPStatusError) as refused:
            client.runs.create(tid, "slower", input={"items": []})
        assert refused.value.response.status_code == 409
        second = client.runs.create(tid, "asker", input={"items": []}, multitask_strategy="interrupt")
        (tmp_path / "gate").touch()  # the cancelled run's node thread ends; what it returns is fenced off
        client.runs.join(tid, second["run_id"])
        assert client.runs.get(tid, first["run_id"])["status"] == "interrupted"  # cancelled
        got = client.runs.get(tid, second["run_id"])
        assert got["status"] == "success" and got["assistant_id"] == client.assistants.get("asker")["assistant_id"]
        assert "slow" not in client.threads.get_state(tid)["values"]["items"]


def test_a_rollback_cancels_the_run_going_and_starts_from_where_it_began(tmp_path: Path) -> None:
    with hosting(tmp_path) as (_, client, log):
        tid = client.threads.create()["thread_id"]
        client.runs.wait(tid, "asker", input={"items": []}, interrupt_before=["ask"])
        began = client.threads.get_state(tid)["checkpoint"]["checkpoint_id"]
        cut = client.runs.create(tid, "slower", input={"items": ["cut"]})
        wait_for(lambda: "slow" in executions(log), "the slow node")
        again = client.runs.create(
            tid, "asker", input={"items": ["again"]}, multitask_strategy="rollback", interrupt_before=["ask"]
        )
        (tmp_path / "gate").touch()
        client.runs.join(tid, again["run_id"])
        assert client.runs.get(tid, cut["run_id"])["status"] == "interrupted"
        state = client.threads.get_state(tid)
        assert state["values"] == {"items": ["first", "again", "first"]}  # nothing of the cancelled run
        assert began in [h["checkpoint"]["checkpoint_id"] for h in client.threads.get_history(tid, limit=20)]


@pytest.mark.parametrize("backend", ["memory", "postgres"])
def test_a_hosted_graph_waits_resumes_and_rolls_back_on_the_other_backends(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    storage = {"STORAGE_BACKEND": "memory"} if backend == "memory" else {"DATABASE_URL": request.getfixturevalue("pg_url")}
    with hosting(tmp_path, **storage) as (_, client, log):
        tid = client.threads.create()["thread_id"]
        assert "__interrupt__" in client.runs.wait(tid, "asker", input={"items": []})
        assert client.runs.wait(tid, "asker", command={"resume": "yes"}) == {"items": ["first", "answer:yes"]}
        cut = client.runs.create(tid, "slower", input={"items": ["cut"]})
        wait_for(lambda: executions(log).count("slow") == 1, "the slow node")
        again = client.runs.create(
            tid, "asker", input={"items": ["again"]}, multitask_strategy="rollback", interrupt_before=["ask"]
        )
        (tmp_path / "gate").touch()
        client.runs.join(tid, again["run_id"])
        assert client.runs.get(tid, cut["run_id"])["status"] == "interrupted"
        # every checkpoint kept (CHECKPOINT_KEEP is 3): the rollback found where the cut run began
        assert client.threads.get_state(tid)["values"] == {"items": ["first", "answer:yes", "again", "first"]}
        assert len(client.threads.get_history(tid, limit=100)) > 3


def test_another_process_joins_a_hosted_run_from_the_event_log_and_cancels_it(tmp_path: Path) -> None:
    with hosting(tmp_path) as (_, a, log), serving(tmp_path) as (_, b):  # two servers, one SQLite file
        tid = a.threads.create()["thread_id"]
        run = a.runs.create(tid, "slower", input={"items": []}, stream_mode=["updates"])
        wait_for(lambda: "slow" in executions(log), "the slow node")
        parts = b.runs.join_stream(tid, run["run_id"])
        assert [(p.event, p.data) for p in (next(parts), next(parts))] == [
            ("metadata", {"run_id": run["run_id"], "attempt": 1}),
            ("updates", {"first": {"items": ["first"]}}),
        ]
        assert b.runs.cancel(tid, run["run_id"])["status"] == "interrupted"  # A executes it, B asked
        assert [p.event for p in parts] == ["end"]
        (tmp_path / "gate").touch()  # the cancelled node's thread on A ends; what it returns is fenced off
        assert a.runs.get(tid, run["run_id"])["status"] == "interrupted"
        assert a.threads.get_state(tid)["values"] == {"items": ["first"]}


@pytest.mark.slow
def test_a_hosted_run_killed_with_the_server_is_resumed_from_its_last_checkpoint_by_auto_resume(tmp_path: Path) -> None:
    with hosting(tmp_path, AUTO_RESUME="true") as (server, client, log):
        tid = client.threads.create()["thread_id"]
        run = client.runs.create(tid, "slower", input={"items": []}, stream_mode=["values"])
        # durability "sync" (Sophos's default): `first`'s checkpoint is committed before `slow` begins
        wait_for(lambda: "slow" in executions(log), "the slow node")
        server.kill()
        (tmp_path / "gate").touch()
        server.start()
        # the join (a GET) follows the run that adoption started with the same graph
        assert client.runs.join(tid, run["run_id"]) == {"items": ["first", "slow"]}
        assert executions(log) == ["first", "slow", "slow"]  # the cut node again, the finished one never
        runs = client.runs.list(tid)
        assert [(r["status"], r["metadata"]["trigger"]) for r in runs] == [("success", "adopt"), ("interrupted", "user")]
        assert client.threads.get(tid)["status"] == "idle"

        # an interrupt outlives a kill -9: not resumed by AUTO_RESUME (a person answers it), answered once after
        assert "__interrupt__" in client.runs.wait(tid, "asker", input={"items": []})
        server.kill()
        server.start()
        assert client.threads.get(tid)["status"] == "interrupted"
        assert len(client.runs.list(tid)) == 3
        done = client.runs.wait(tid, "asker", command={"resume": "later"})
        assert done["items"][-2:] == ["first", "answer:later"]
        assert executions(log)[-4:] == ["first", "ask", "ask", "answered:later"]


def test_on_postgresql_b_joins_and_cancels_a_run_of_a_and_adopts_a_run_of_a_killed(tmp_path: Path, pg_url: str) -> None:
    shared = {"DATABASE_URL": pg_url, "AUTO_RESUME": "true", "RUN_LEASE_SECONDS": "3"}
    with hosting(tmp_path, **shared) as (a_server, a, log), serving(tmp_path, **shared) as (_, b):  # two processes
        cut, kept = a.threads.create()["thread_id"], a.threads.create()["thread_id"]
        run = a.runs.create(cut, "slower", input={"items": []}, stream_mode=["updates"])
        wait_for(lambda: executions(log).count("slow") == 1, "the slow node on A")
        parts = b.runs.join_stream(cut, run["run_id"])  # B follows A's run from the event log
        assert [(p.event, p.data) for p in (next(parts), next(parts))] == [
            ("metadata", {"run_id": run["run_id"], "attempt": 1}),
            ("updates", {"first": {"items": ["first"]}}),
        ]
        assert b.runs.cancel(cut, run["run_id"])["status"] == "interrupted"  # A executes it, B asked
        assert [p.event for p in parts] == ["end"]
        assert a.runs.get(cut, run["run_id"])["status"] == "interrupted"

        adopted = a.runs.create(kept, "slower", input={"items": []}, stream_mode=["values"])
        wait_for(lambda: executions(log).count("slow") == 2, "the second slow node on A")
        a_server.kill()  # both node threads die with A, the cancelled run's and the running one's
        (tmp_path / "gate").touch()
        # B finds A's session gone, records the run as interrupted and resumes it (AUTO_RESUME); a GET
        # join made before that resume starts ends with the interrupted run, so the test waits for it
        wait_for(lambda: len(b.runs.list(kept)) == 2, "B's adoption", timeout=30)
        assert b.runs.join(kept, adopted["run_id"]) == {"items": ["first", "slow"]}  # followed to the end of the adopted run
        assert executions(log) == ["first", "slow", "first", "slow", "slow"]  # the cut node once more, nothing else
        assert [(r["status"], r["metadata"]["trigger"]) for r in b.runs.list(kept)] == [
            ("success", "adopt"),
            ("interrupted", "user"),
        ]
        assert [r["status"] for r in b.runs.list(cut)] == ["interrupted"]  # a cancelled run is never adopted
        assert b.threads.get_state(cut)["values"] == {"items": ["first"]}
