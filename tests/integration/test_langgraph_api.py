"""LangGraph's official Python SDK (`langgraph-sdk`, pinned in requirements.lock) driving a
real `sophos serve` on its LangGraph API port: threads, streamed runs in every mapped
mode, state and history, background runs joined by a second client, cancel, an approval
as an interrupt resumed through the SDK (a real MCP ledger counts executions), and a
server killed with SIGKILL mid-stream whose re-join gets the rest of the run."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.support.app import app_env, config_dir, ledger_server_entry
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.server import LiveServer, free_port


def charges(book: Path, key_prefix: str) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in book.read_text().splitlines()] if book.exists() else []
    return [e for e in lines if e["event"] == "start" and e["key"].startswith(key_prefix)]


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The model: a charge per number in the user's message, then a short text; "slow"
    streams a long answer a token at a time."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return {"text": f"done: {last['content'][:40]}"}
    if "slow" in last["content"]:
        return {"loop": "tick ", "count": 60, "token_delay": 0.05}
    amounts = [int(a) for a in re.findall(r"\d+", last["content"])]
    if amounts:
        return {"tool_calls": [("ledger__charge", {"amount": a}) for a in amounts]}
    return {"text": f"You said {last['content']!r}, and I agree."}


@dataclass
class Sophos:
    server: LiveServer
    fake: FakeOllama
    book: Path
    lg_port: int
    api_key: str | None = None  # API_TOKEN, when the server has one

    @property
    def lg_url(self) -> str:
        return f"http://127.0.0.1:{self.lg_port}"

    def client(self, **headers: str) -> SyncLangGraphClient:
        return get_sync_client(url=self.lg_url, api_key=self.api_key, headers=headers or None)


@contextmanager
def sophos(tmp_path: Path, **env: str) -> Iterator[Sophos]:
    book = tmp_path / "ledger.jsonl"
    config_dir(tmp_path, {"ledger": ledger_server_entry(book)})
    lg_port = free_port()
    with fake_ollama() as fake:
        fake.responder = answer
        settings = {"TOOL_APPROVAL": "unsafe", "LANGGRAPH_API_PORT": str(lg_port), **env}
        server = LiveServer(app_env(tmp_path, fake.url, **settings), tmp_path).start()
        try:
            wait_up(f"http://127.0.0.1:{lg_port}/ok")
            yield Sophos(server, fake, book, lg_port, env.get("API_TOKEN"))
        finally:
            server.stop()


def wait_up(url: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"{url} did not answer")


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sophos]:
    with sophos(tmp_path_factory.mktemp("lgapi")) as s:
        yield s


def human(text: str) -> dict[str, Any]:
    return {"messages": [{"type": "human", "content": text}]}


def stream(client: SyncLangGraphClient, tid: str, modes: list[str], **kw: Any) -> list[tuple[str, Any]]:
    return [(p.event, p.data) for p in client.runs.stream(tid, "agent", stream_mode=modes, **kw)]  # type: ignore[arg-type]


def test_the_assistant_and_the_server_info_are_served(shared: Sophos) -> None:
    client = shared.client()
    found = client.assistants.search(graph_id="agent")
    assert [a["graph_id"] for a in found] == ["agent"]
    assert client.assistants.get("agent")["assistant_id"] == found[0]["assistant_id"]
    assert client.assistants.get(found[0]["assistant_id"])["graph_id"] == "agent"
    graph = client.assistants.get_graph("agent")
    assert {n["id"] for n in graph["nodes"]} == {"__start__", "agent", "tools", "__end__"}
    assert httpx.get(f"{shared.lg_url}/info").json()["flags"]["assistants"] is True
    with pytest.raises(httpx.HTTPStatusError) as e:
        client.assistants.get("no-such-graph")
    assert e.value.response.status_code == 404


def test_threads_are_created_found_renamed_and_deleted(shared: Sophos) -> None:
    client = shared.client()
    tid = str(uuid4())
    label = f"crud-{tid[:8]}"
    made = client.threads.create(thread_id=tid, metadata={"graph_id": "agent", "label": label})
    assert made["thread_id"] == tid and made["status"] == "idle"
    assert made["metadata"]["graph_id"] == "agent" and made["metadata"]["label"] == label
    assert client.threads.create(thread_id=tid, if_exists="do_nothing")["thread_id"] == tid
    with pytest.raises(httpx.HTTPStatusError) as e:
        client.threads.create(thread_id=tid)
    assert e.value.response.status_code == 409
    assert client.threads.get(tid)["values"] == {"messages": []}
    found = client.threads.search(metadata={"graph_id": "agent"}, status="idle", limit=500)
    assert tid in [t["thread_id"] for t in found]
    assert client.threads.search(metadata={"graph_id": "another"}) == []
    assert [t["thread_id"] for t in client.threads.search(metadata={"label": label})] == [tid]
    assert client.threads.count(metadata={"label": label}) == 1
    patched = client.threads.update(tid, metadata={"title": "Renamed", "step": 2})["metadata"]
    assert (patched["title"], patched["step"], patched["label"]) == ("Renamed", 2, label)
    # the main API sees the same conversation: one store, two doors
    assert shared.server.get(f"/api/conversations/{tid}").json()["conversation"]["title"] == "Renamed"
    client.threads.delete(tid)
    with pytest.raises(httpx.HTTPStatusError) as e:
        client.threads.get(tid)
    assert e.value.response.status_code == 404


def test_a_streamed_run_gives_the_answer_of_api_chat_in_every_mode(shared: Sophos) -> None:
    client = shared.client()
    tid = client.threads.create()["thread_id"]
    events = stream(client, tid, ["values", "updates", "messages-tuple"], input=human("hello sdk"))
    names = [e for e, _ in events]
    assert names[0] == "metadata" and names[-1] == "end"
    run_id = events[0][1]["run_id"]
    tokens = "".join(d[0]["content"] for e, d in events if e == "messages" and d[0]["type"] == "AIMessageChunk")
    assert all(d[1]["langgraph_node"] == "agent" for e, d in events if e == "messages")
    final = [d for e, d in events if e == "values"][-1]["messages"]
    assert [m["type"] for m in final] == ["human", "ai"]
    assert final[1]["content"] == tokens == "You said 'hello sdk', and I agree."
    assert [d for e, d in events if e == "updates"] == [{"agent": {"messages": [final[1]]}}]
    assert [len(d["messages"]) for e, d in events if e == "values"] == [1, 2]
    # the same thread through the main API: the same messages, the same run
    detail = shared.server.get(f"/api/conversations/{tid}").json()
    assert [m["content"] for m in detail["messages"]] == [m["content"] for m in final]
    assert client.runs.get(tid, run_id)["status"] == "success"
    assert [r["run_id"] for r in client.runs.list(tid)] == [run_id]
    # and /api/chat answers a message the same way
    again = shared.server.post("/api/chat", {"message": "hello sdk", "conversation": None})
    assert again.status_code == 200


def test_state_and_history_show_the_checkpoints_newest_first_with_parents(shared: Sophos) -> None:
    client = shared.client()
    tid = client.threads.create()["thread_id"]
    stream(client, tid, ["values"], input=human("first"))
    stream(client, tid, ["values"], input=human("second"))
    state = client.threads.get_state(tid)
    assert [m["type"] for m in state["values"]["messages"]] == ["human", "ai", "human", "ai"]
    assert state["next"] == [] and state["tasks"] == [] and state["interrupts"] == []
    history = client.threads.get_history(tid, limit=100)
    assert history[0]["checkpoint"]["checkpoint_id"] == state["checkpoint"]["checkpoint_id"]
    counts = [len(h["values"]["messages"]) for h in history]
    assert counts == sorted(counts, reverse=True) and counts[0] == 4
    for newer, older in zip(history, history[1:], strict=False):
        assert newer["parent_checkpoint"]["checkpoint_id"] == older["checkpoint"]["checkpoint_id"]
    older = client.threads.get_history(tid, limit=2, before={"configurable": history[1]["checkpoint"]})
    assert [h["checkpoint"]["checkpoint_id"] for h in older] == [h["checkpoint"]["checkpoint_id"] for h in history[2:4]]


def test_a_background_run_is_joined_by_a_second_client(shared: Sophos) -> None:
    first, second = shared.client(), shared.client()
    tid = first.threads.create()["thread_id"]
    run = first.runs.create(tid, "agent", input=human("please go slow"))
    assert run["status"] in ("pending", "running")
    joined = [(p.event, p.data) for p in second.runs.join_stream(tid, run["run_id"], stream_mode="messages-tuple")]
    assert joined[-1][0] == "end"
    ticks = "".join(d[0]["content"] for e, d in joined if e == "messages")
    assert ticks == "tick " * 60
    values = second.runs.join(tid, run["run_id"])
    assert values["messages"][-1]["content"] == ticks
    assert first.runs.get(tid, run["run_id"])["status"] == "success"


def test_a_second_client_joining_without_stream_modes_gets_the_runs_own(shared: Sophos) -> None:
    first, second = shared.client(), shared.client()
    tid = first.threads.create()["thread_id"]
    run = first.runs.create(tid, "agent", input=human("please go slow"), stream_mode=["values", "messages-tuple"])
    joined = [(p.event, p.data) for p in second.runs.join_stream(tid, run["run_id"])]  # no stream_mode: the run's
    assert joined[-1][0] == "end"
    assert "".join(d[0]["content"] for e, d in joined if e == "messages") == "tick " * 60
    assert [d for e, d in joined if e == "values"][-1]["messages"][-1]["content"] == "tick " * 60
    plain = first.runs.create(tid, "agent", input=human("hello"))  # none named: values, as langgraph-api's default
    assert {p.event for p in second.runs.join_stream(tid, plain["run_id"])} == {"metadata", "values", "end"}


def test_location_names_the_bare_stream_of_the_run(shared: Sophos) -> None:
    tid = shared.client().threads.create()["thread_id"]
    body = {"assistant_id": "agent", "input": human("hi"), "stream_mode": ["updates", "messages-tuple"]}
    with httpx.stream("POST", f"{shared.lg_url}/threads/{tid}/runs/stream", json=body, timeout=30) as r:
        rid = r.headers["content-location"].rsplit("/", 1)[1]
        assert r.headers["location"] == f"/threads/{tid}/runs/{rid}/stream"
        r.read()
    created = httpx.post(f"{shared.lg_url}/threads/{tid}/runs", json={**body, "input": human("again")}, timeout=10)
    assert created.headers["location"] == f"/threads/{tid}/runs/{created.json()['run_id']}/stream"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/threads/search", {"metadata": ["graph_id", "agent"]}),
        ("/threads/count", {"metadata": "agent"}),
        ("/assistants/search", {"limit": "10"}),
        ("/assistants/search", {"graph_id": ["agent"]}),
        ("/threads/search", {"limit": True}),
    ],
)
def test_a_search_field_of_the_wrong_type_is_422_as_in_langgraph_api(shared: Sophos, path: str, body: Any) -> None:
    r = httpx.post(f"{shared.lg_url}{path}", json=body, timeout=10)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "UNPROCESSABLE_ENTITY" and next(iter(body)) in r.json()["error"]["message"]


def test_a_cancelled_run_is_interrupted_and_its_thread_idle(shared: Sophos) -> None:
    client = shared.client()
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "agent", input=human("slow, to be cancelled"))
    time.sleep(0.5)
    client.runs.cancel(tid, run["run_id"], wait=True)
    got = client.runs.get(tid, run["run_id"])
    assert got["status"] == "interrupted" and got["metadata"]["sophos_status"] == "cancelled"
    assert client.threads.get(tid)["status"] == "idle"


def test_an_approval_is_an_interrupt_and_a_resume_runs_the_call_once(shared: Sophos) -> None:
    client = shared.client()
    tid = client.threads.create()["thread_id"]
    events = stream(client, tid, ["values", "updates"], input=human("pay 7"))
    interrupt = [d for e, d in events if e == "updates" and "__interrupt__" in d][-1]["__interrupt__"][0]
    action = interrupt["value"]["action_requests"][0]
    assert action["name"] == "ledger__charge" and action["args"] == {"amount": 7}
    assert interrupt["value"]["review_configs"][0]["allowed_decisions"] == ["approve", "edit", "reject"]
    thread = client.threads.get(tid)
    assert thread["status"] == "interrupted" and thread["interrupts"]
    state = client.threads.get_state(tid)
    assert state["next"] == ["tools"] and state["interrupts"][0]["id"] == interrupt["id"]
    assert state["tasks"][0]["interrupts"][0]["value"] == interrupt["value"]
    assert charges(shared.book, f"{tid}:") == []
    # a made-up tool result never closes a call that waits for a person
    tool = {"messages": [{"type": "tool", "content": "Successfully handled tool call", "tool_call_id": action["id"]}]}
    with pytest.raises(httpx.HTTPStatusError) as e:
        stream(client, tid, ["values"], input=tool)
    assert e.value.response.status_code == 409 and "DECISION_REQUIRED" in e.value.response.text
    resumed = stream(client, tid, ["values"], command={"resume": {"decisions": [{"type": "approve"}]}})
    final = [d for e, d in resumed if e == "values"][-1]["messages"]
    assert final[-1]["content"].startswith("done:")
    assert len(charges(shared.book, f"{tid}:")) == 1
    # the same answer again is stale: nothing waits, nothing runs
    with pytest.raises(httpx.HTTPStatusError) as e:
        stream(client, tid, ["values"], command={"resume": {"decisions": [{"type": "approve"}]}})
    assert e.value.response.status_code == 409
    assert len(charges(shared.book, f"{tid}:")) == 1
    assert client.threads.get(tid)["status"] == "idle"


def test_an_edited_call_runs_with_the_new_arguments(shared: Sophos) -> None:
    client = shared.client()
    tid = client.threads.create()["thread_id"]
    stream(client, tid, ["values"], input=human("pay 9"))
    edit = {"type": "edit", "edited_action": {"name": "ledger__charge", "args": {"amount": 3}}}
    client.runs.wait(tid, "agent", command={"resume": {"decisions": [edit]}})
    done = charges(shared.book, f"{tid}:")
    assert len(done) == 1 and "3" in json.dumps(done[0])


@pytest.mark.parametrize(
    "body",
    [
        {"assistant_id": "agent", "input": {"messages": [{"type": "human", "content": 5}]}},
        {"assistant_id": "agent", "input": "text"},
        {"assistant_id": "agent", "input": {"messages": [{"type": "ai", "content": "hi"}]}},
        {"assistant_id": "agent", "input": {"messages": []}},
        {"assistant_id": "agent", "stream_mode": "everything", "input": {"messages": [{"type": "human", "content": "x"}]}},
        {"assistant_id": "agent", "multitask_strategy": "later", "input": {"messages": [{"type": "human", "content": "x"}]}},
        {"assistant_id": "agent", "command": {"goto": "agent"}},
        {"assistant_id": "agent", "command": {"resume": 1}},
        {"assistant_id": "nobody", "input": {"messages": [{"type": "human", "content": "x"}]}},
        {"assistant_id": "agent", "checkpoint": {"checkpoint_id": "nope"}},
        {"assistant_id": "agent", "input": {"messages": [{"type": "human", "content": "x" * 40_000}]}},
        {"assistant_id": "agent", "surprise": True},
        [1, 2],
    ],
)
def test_bad_run_requests_get_a_4xx_with_a_json_body(shared: Sophos, body: Any) -> None:
    tid = shared.client().threads.create()["thread_id"]
    for path in (f"/threads/{tid}/runs", f"/threads/{tid}/runs/stream", f"/threads/{tid}/runs/wait"):
        r = httpx.post(f"{shared.lg_url}{path}", json=body, timeout=10)
        assert 400 <= r.status_code < 500, (path, r.status_code, r.text)
        assert r.json()["error"]["code"]


def test_bad_paths_and_bodies_elsewhere_get_a_4xx(shared: Sophos) -> None:
    url = shared.lg_url
    tid = shared.client().threads.create()["thread_id"]
    cases = [
        httpx.get(f"{url}/threads/not-a-uuid"),
        httpx.get(f"{url}/threads/{uuid4()}"),
        httpx.get(f"{url}/threads/{tid}/runs/{uuid4()}"),
        httpx.post(f"{url}/threads", content=b"{nope"),
        httpx.post(f"{url}/threads", json={"thread_id": "x"}),
        httpx.post(f"{url}/threads/search", json={"limit": -1}),
        httpx.post(f"{url}/threads/search", json={"sort_by": "nope"}),
        httpx.post(f"{url}/threads/{tid}/history", json={"limit": "ten"}),
        httpx.post(f"{url}/threads/{tid}/state", json={"values": {}}),
        httpx.get(f"{url}/threads/{tid}/runs?limit=x"),
        httpx.post(f"{url}/threads/{tid}/runs/{uuid4()}/cancel"),
    ]
    for r in cases:
        assert 400 <= r.status_code < 500 or r.status_code == 501, (r.request.url, r.status_code, r.text)
        assert r.json()["error"]["code"]


@pytest.mark.slow
def test_a_run_killed_mid_stream_is_rejoined_by_the_sdk_after_a_restart(tmp_path: Path) -> None:
    # AUTO_RESUME resumes it at the restart; the SDK's re-join (a GET) follows that run
    with sophos(tmp_path, AUTO_RESUME="true") as s:
        client = s.client()
        tid = client.threads.create()["thread_id"]
        got: list[tuple[str, Any]] = []
        failure: list[BaseException] = []

        def consume() -> None:
            try:
                for part in client.runs.stream(
                    tid, "agent", input=human("slow, then crash"), stream_mode=["values", "messages-tuple"], stream_resumable=True
                ):
                    got.append((part.event, part.data))
            except BaseException as e:  # noqa: BLE001 - reported by the test below
                failure.append(e)

        reader = threading.Thread(target=consume, daemon=True)
        reader.start()
        deadline = time.monotonic() + 20
        while sum(1 for e, _ in got if e == "messages") < 10 and time.monotonic() < deadline:
            time.sleep(0.02)
        s.server.kill()
        before = len(got)
        s.server.start()
        reader.join(60)
        assert not reader.is_alive() and not failure, failure
        assert got[-1][0] == "end"
        final = [d for e, d in got if e == "values"][-1]["messages"]
        # the run was resumed after the crash: one question, one complete answer, nothing doubled
        assert [m["type"] for m in final] == ["human", "ai"]
        assert final[1]["content"] == "tick " * 60
        # the re-join streamed the resumed run's answer whole, in the modes first asked for
        chunks = [d[0] for e, d in got[before:] if e == "messages"]
        resumed = [c for c in chunks if c["id"] != chunks[-1]["id"]] if chunks else []
        assert "".join(c["content"] for c in chunks if c["id"] == chunks[-1]["id"]) == "tick " * 60
        assert all(c["content"] == "tick " for c in resumed)  # only the crashed run's last ticks
        assert client.threads.get_state(tid)["values"]["messages"] == final
        runs = client.runs.list(tid)
        assert [r["status"] for r in runs] == ["success", "interrupted"]


@pytest.mark.slow
def test_a_get_never_starts_a_run_even_for_a_run_a_crash_stopped(tmp_path: Path) -> None:
    """Issue 42: a join or re-join of a run a crash stopped resumed it, so a link or an
    `<img>` on another page could start a run. A GET only reads: the run stays interrupted
    until a POST (a client's resume) or AUTO_RESUME goes on with it."""
    with sophos(tmp_path) as s:
        s.fake.responder = lambda body: {"loop": "tick ", "count": 400, "token_delay": 0.05}
        client = s.client()
        tid = client.threads.create()["thread_id"]
        rid = client.runs.create(tid, "agent", input=human("go on and on"))["run_id"]
        runs_url = f"{s.lg_url}/threads/{tid}/runs/{rid}"
        with httpx.stream("GET", f"{runs_url}/stream", params={"stream_mode": "messages-tuple"}, timeout=30) as r:
            chunks = 0
            for line in r.iter_lines():
                chunks += line.startswith("event: messages")
                if chunks == 5:  # mid-answer
                    break
        s.server.kill()
        s.server.start()
        wait_up(f"{s.lg_url}/ok")
        s.fake.responder = answer
        asked = len(s.fake.requests)
        joined = httpx.get(f"{runs_url}/join", timeout=30)
        assert joined.status_code == 200 and joined.json()["messages"][0]["content"] == "go on and on"
        with httpx.stream("GET", f"{runs_url}/stream", timeout=30) as r:
            assert [line for line in r.iter_lines() if line.startswith("event:")][-1] == "event: end"
        assert [r["status"] for r in client.runs.list(tid)] == ["interrupted"]
        assert len(s.fake.requests) == asked  # the model was not asked again
        # a client that means it resumes with a POST
        client.runs.wait(tid, "agent")
        assert [r["status"] for r in client.runs.list(tid)] == ["success", "interrupted"]


def first_seen(history: list[dict[str, Any]], message_id: str) -> dict[str, Any]:
    """As Agent Chat UI finds where a message starts: the oldest state that holds it."""
    return [h for h in history if any(m["id"] == message_id for m in h["values"]["messages"])][-1]


def test_a_run_from_an_older_checkpoint_edits_or_regenerates_on_a_new_branch(shared: Sophos) -> None:
    client = shared.client()
    tid = client.threads.create()["thread_id"]
    stream(client, tid, ["values"], input=human("first question"))
    stream(client, tid, ["values"], input=human("second question"))
    history = client.threads.get_history(tid, limit=100)
    answer = client.threads.get_state(tid)["values"]["messages"][-1]
    # regenerate: the parent checkpoint of the answer's first state, no input
    parent = first_seen(history, answer["id"])["parent_checkpoint"]
    client.runs.wait(tid, "agent", checkpoint=parent)
    messages = client.threads.get_state(tid)["values"]["messages"]
    assert [m["content"] for m in messages][-2:] == ["second question", "You said 'second question', and I agree."]
    assert messages[-1]["id"] != answer["id"]
    # edit: the parent checkpoint of the question's first state, with the new text
    history = client.threads.get_history(tid, limit=100)
    question = client.threads.get_state(tid)["values"]["messages"][2]
    parent = first_seen(history, question["id"])["parent_checkpoint"]
    client.runs.wait(tid, "agent", input=human("edited question"), checkpoint=parent)
    contents = [m["content"] for m in client.threads.get_state(tid)["values"]["messages"]]
    assert contents[2:] == ["edited question", "You said 'edited question', and I agree."]
    branches = shared.server.get(f"/api/conversations/{tid}").json()["branchCount"]
    assert branches == 3


def test_stateless_runs_and_if_not_exists_make_their_thread_only_for_a_good_request(shared: Sophos) -> None:
    client = shared.client()
    before = client.threads.count()
    values = client.runs.wait(None, "agent", input=human("stateless"))
    assert values["messages"][-1]["content"] == "You said 'stateless', and I agree."
    tid = str(uuid4())
    parts = stream(client, tid, ["values"], input=human("made here"), if_not_exists="create")
    assert parts[-1][0] == "end" and client.threads.get(tid)["values"]["messages"][0]["content"] == "made here"
    assert client.threads.count() == before + 2
    for bad in ({"input": human("x"), "multitask_strategy": "later"}, {"input": {"messages": []}}):
        r = httpx.post(f"{shared.lg_url}/runs/wait", json={"assistant_id": "agent", **bad}, timeout=10)
        assert r.status_code == 400
        r = httpx.post(
            f"{shared.lg_url}/threads/{uuid4()}/runs",
            json={"assistant_id": "agent", "if_not_exists": "create", **bad},
            timeout=10,
        )
        assert r.status_code == 400
    assert client.threads.count() == before + 2  # a refused request made no thread
    with pytest.raises(httpx.HTTPStatusError) as e:
        client.runs.create(str(uuid4()), "agent", input=human("nowhere"))
    assert e.value.response.status_code == 404


def test_two_servers_on_one_postgresql_database_share_threads_runs_and_approvals(tmp_path: Path, pg_url: str) -> None:
    """The SDK on one server's LangGraph API joins, and answers, a run the other executes."""
    book = tmp_path / "ledger.jsonl"
    config_dir(tmp_path, {"ledger": ledger_server_entry(book)})
    ports = free_port(), free_port()
    with fake_ollama() as fake:
        fake.responder = answer
        servers = [
            LiveServer(
                app_env(tmp_path, fake.url, TOOL_APPROVAL="unsafe", DATABASE_URL=pg_url, LANGGRAPH_API_PORT=str(p)), tmp_path
            ).start()
            for p in ports
        ]
        try:
            for p in ports:
                wait_up(f"http://127.0.0.1:{p}/ok")
            a, b = (get_sync_client(url=f"http://127.0.0.1:{p}", api_key=None) for p in ports)
            tid = a.threads.create(metadata={"where": "postgres"})["thread_id"]
            assert [t["thread_id"] for t in b.threads.search(metadata={"where": "postgres"})] == [tid]
            run = a.runs.create(tid, "agent", input=human("slow over there"))
            joined = "".join(
                p.data[0]["content"]
                for p in b.runs.join_stream(tid, run["run_id"], stream_mode="messages-tuple")
                if p.event == "messages"
            )
            assert joined == "tick " * 60 and b.runs.get(tid, run["run_id"])["status"] == "success"
            a.runs.wait(tid, "agent", input=human("pay 6"))
            assert b.threads.get(tid)["status"] == "interrupted"
            done = b.runs.wait(tid, "agent", command={"resume": {"decisions": [{"type": "approve"}]}})
            assert done["messages"][-1]["content"].startswith("done:")
            assert len(charges(book, f"{tid}:")) == 1
        finally:
            for server in servers:
                server.stop()


def test_history_shows_every_branch_as_a_fork_and_a_run_from_another_branch_switches_to_it(shared: Sophos) -> None:
    client = shared.client()
    tid = client.threads.create()["thread_id"]
    stream(client, tid, ["values"], input=human("question"))
    first = client.threads.get_state(tid)
    answer = first["values"]["messages"][-1]
    history = client.threads.get_history(tid, limit=100)
    client.runs.wait(tid, "agent", checkpoint=first_seen(history, answer["id"])["parent_checkpoint"])  # regenerate
    history = client.threads.get_history(tid, limit=100)
    ids = [h["checkpoint"]["checkpoint_id"] for h in history]
    assert len(ids) == len(set(ids)) and first["checkpoint"]["checkpoint_id"] in ids
    # the original answer and the regenerated one hang from one parent: a fork, as the clients build it
    children: dict[str, list[str]] = {}
    for h in history:
        parent = (h["parent_checkpoint"] or {}).get("checkpoint_id")
        children.setdefault(parent or "$", []).append(h["values"]["messages"][-1]["id"] if h["values"]["messages"] else "")
    forks = [kids for kids in children.values() if len(kids) > 1]
    assert len(forks) == 1 and answer["id"] in forks[0]
    # continuing from the original branch's head (the client switched to it) makes it the active one
    client.runs.wait(tid, "agent", input=human("and then?"), checkpoint=first["checkpoint"])
    contents = [m["content"] for m in client.threads.get_state(tid)["values"]["messages"]]
    assert contents == ["question", answer["content"], "and then?", "You said 'and then?', and I agree."]
    assert shared.server.get(f"/api/conversations/{tid}").json()["activeBranch"] == 1


def test_a_copied_thread_has_the_messages_and_metadata_and_goes_its_own_way(shared: Sophos) -> None:
    client = shared.client()
    empty = client.threads.create(metadata={"label": "copy-empty"})["thread_id"]
    copied = client.threads.copy(empty)
    assert copied["thread_id"] != empty and copied["metadata"]["label"] == "copy-empty"
    tid = client.threads.create(metadata={"label": "copy-src"})["thread_id"]
    stream(client, tid, ["values"], input=human("copy me"))
    copy = client.threads.copy(tid)
    cid = copy["thread_id"]
    assert cid != tid and copy["metadata"]["label"] == "copy-src"
    said = [m["content"] for m in client.threads.get_state(cid)["values"]["messages"]]  # type: ignore[call-overload]
    assert said == ["copy me", "You said 'copy me', and I agree."]
    stream(client, cid, ["values"], input=human("only in the copy"))
    assert len(client.threads.get_state(tid)["values"]["messages"]) == 2  # type: ignore[call-overload]
    assert len(client.threads.get_state(cid)["values"]["messages"]) == 4  # type: ignore[call-overload]
    with pytest.raises(httpx.HTTPStatusError) as e:
        client.threads.copy(str(uuid4()))
    assert e.value.response.status_code == 404
