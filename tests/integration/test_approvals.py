"""Asking before acting, for real: `sophos serve` subprocesses, the ledger MCP server (whose
`charge` is destructive and not idempotent, and records every execution with its
idempotency key) and a fake Ollama that records every prompt."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.app import SOPHOS, app_env, config_dir, ledger_server_entry, process_env
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.server import LiveServer, sse_events


def charges(book: Path) -> list[dict[str, Any]]:
    """The ledger's executions of `charge` (one `start` line each)."""
    lines = [json.loads(x) for x in book.read_text().splitlines()] if book.exists() else []
    return [e for e in lines if e["event"] == "start" and e["label"].startswith("charge-")]


def pay(*amounts: int) -> dict[str, Any]:
    """A model reply asking for one charge per amount, in one step."""
    return {"tool_calls": [("ledger__charge", {"amount": a}) for a in amounts]}


@contextmanager
def sophos(
    tmp_path: Path, replies: list[dict[str, Any]], entry: dict[str, Any] | None = None, **env: str
) -> Iterator[tuple[LiveServer, FakeOllama, Path]]:
    book = tmp_path / "ledger.jsonl"
    config_dir(tmp_path, {"ledger": entry or ledger_server_entry(book)})
    with fake_ollama(replies) as fake:
        server = LiveServer(app_env(tmp_path, fake.url, **{"TOOL_APPROVAL": "unsafe", **env}), tmp_path).start()
        try:
            yield server, fake, book
        finally:
            server.stop()


def run(server: LiveServer, body: dict[str, Any]) -> tuple[str, list[tuple[str, Any]]]:
    """POST /api/chat and read the run's stream to its end: (conversation, events)."""
    with httpx.stream("POST", f"{server.url}/api/chat", json=body, headers={"Accept": "text/event-stream"}, timeout=60) as r:
        assert r.status_code == 200, r.read()
        cid = r.headers["X-Conversation-Id"]
        return cid, [(name, data) for _, name, data in sse_events(r)]


def detail(server: LiveServer, cid: str) -> dict[str, Any]:
    response = server.get(f"/api/conversations/{cid}")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def waiting_calls(server: LiveServer, cid: str) -> list[dict[str, Any]]:
    return list(detail(server, cid).get("pendingApprovals") or [])


@dataclass
class Shared:
    """One server for the tests that need no special setting; each test has its own
    conversation, its own message and its own amounts."""

    server: LiveServer
    fake: FakeOllama
    book: Path
    db: Path

    def journaled(self, cid: str) -> int:
        """The conversation's entries in the tool-call journal ("about to call" records)."""
        with closing(sqlite3.connect(self.db)) as conn:
            return int(conn.execute("SELECT count(*) FROM tool_calls WHERE conversation_id = ?", (cid,)).fetchone()[0])

    def charges(self, cid: str) -> list[dict[str, Any]]:
        return [e for e in charges(self.book) if e["key"].startswith(f"{cid}:")]

    def prompts(self, text: str) -> list[str]:
        """Every prompt the model got in the conversation that began with `text`, as JSON."""
        return [
            json.dumps(r["messages"])
            for r in self.fake.requests
            if any(m["role"] == "user" and m["content"] == text for m in r["messages"])
        ]


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The model: a charge per number in the user's message, then a short text."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return {"text": f"done: {last['content'][:60]}"}
    amounts = [int(a) for a in re.findall(r"\d+", last["content"])]
    return pay(*amounts) if amounts else {"text": "hello"}


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    tmp_path = tmp_path_factory.mktemp("approvals")
    with sophos(tmp_path, []) as (server, fake, book):
        fake.responder = answer
        yield Shared(server, fake, book, tmp_path / "db" / "sophos.db")


def test_a_gated_call_does_not_run_until_approved_and_then_runs_once(shared: Shared) -> None:
    server = shared.server
    cid, events = run(server, {"message": "pay 5 (approved)"})
    names = [e for e, _ in events]
    assert names[-2:] == ["approval", "end"] and events[-1][1] == {"conversation": cid, "status": "waiting"}
    approval = events[-2][1]
    assert approval["conversation"] == cid and len(approval["calls"]) == 1
    call = approval["calls"][0]
    assert (call["name"], call["server"], call["args"]) == ("ledger__charge", "ledger", {"amount": 5})
    assert "destructive" in call["description"]
    assert shared.charges(cid) == [] and shared.journaled(cid) == 0  # not run, not even journaled
    body = detail(server, cid)
    assert body["conversation"]["status"] == "waiting" and body["resumable"] is True
    assert body["pendingApprovals"] == approval["calls"]

    _, events = run(server, {"conversation": cid, "resume": True, "decisions": {call["id"]: {"type": "approve"}}})
    assert events[-1] == ("end", {"conversation": cid, "status": "completed"})
    assert [e["key"] for e in shared.charges(cid)] == [f"{cid}:{call['id']}"]  # exactly once, the usual key
    assert detail(server, cid)["conversation"]["status"] == "completed"
    assert "pendingApprovals" not in detail(server, cid)
    assert len(shared.prompts("pay 5 (approved)")) == 2


def test_a_rejected_call_never_runs_and_the_model_is_told_the_reason(shared: Shared) -> None:
    server = shared.server
    cid, events = run(server, {"message": "pay 6 (rejected)"})
    call = events[-2][1]["calls"][0]
    decision = {"type": "reject", "message": "not this month"}
    _, events = run(server, {"conversation": cid, "resume": True, "decisions": {call["id"]: decision}})
    assert events[-1] == ("end", {"conversation": cid, "status": "completed"})
    assert shared.charges(cid) == []
    assert "not this month" in shared.prompts("pay 6 (rejected)")[-1]  # the model's next prompt holds the reason
    result = next(m for m in detail(server, cid)["messages"] if m["role"] == "tool")
    assert result["status"] == "error" and "not this month" in result["content"]


def test_an_edited_call_runs_with_the_edited_args_and_bad_args_are_refused(shared: Shared) -> None:
    server = shared.server
    cid, events = run(server, {"message": "pay 500 (edited)"})
    call = events[-2][1]["calls"][0]
    bad = server.post(
        "/api/chat",
        {"conversation": cid, "resume": True, "decisions": {call["id"]: {"type": "edit", "args": {"amount": "lots"}}}},
    )
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "BAD_REQUEST"
    assert "amount" in bad.json()["error"]["message"]
    assert shared.charges(cid) == [] and waiting_calls(server, cid) == [call]  # nothing ran, still asked
    edit = {"type": "edit", "args": {"amount": 50}}
    _, events = run(server, {"conversation": cid, "resume": True, "decisions": {call["id"]: edit}})
    assert events[-1][1]["status"] == "completed"
    assert [e["label"] for e in shared.charges(cid)] == ["charge-50"]
    result = next(m for m in detail(server, cid)["messages"] if m["role"] == "tool")
    assert "edited" in result["content"] and "charged 50" in result["content"]


def test_answering_one_of_three_gated_calls_leaves_two_waiting(shared: Shared) -> None:
    server, text = shared.server, "pay 1, 2 and 3 (one by one)"
    cid, events = run(server, {"message": text})
    calls = events[-2][1]["calls"]
    assert sorted(c["args"]["amount"] for c in calls) == [1, 2, 3] and shared.charges(cid) == []
    first = next(c for c in calls if c["args"]["amount"] == 1)
    _, events = run(server, {"conversation": cid, "resume": True, "decisions": {first["id"]: {"type": "approve"}}})
    assert [e for e, _ in events][-2:] == ["approval", "end"] and events[-1][1]["status"] == "waiting"
    left = waiting_calls(server, cid)
    assert sorted(c["args"]["amount"] for c in left) == [2, 3] == sorted(c["args"]["amount"] for c in events[-2][1]["calls"])
    assert [e["label"] for e in shared.charges(cid)] == ["charge-1"]
    assert len(shared.prompts(text)) == 1  # the model is not asked again before every call is answered
    rest = {c["id"]: {"type": "approve"} for c in left}
    _, events = run(server, {"conversation": cid, "resume": True, "decisions": rest})
    assert events[-1][1]["status"] == "completed"
    assert sorted(e["label"] for e in shared.charges(cid)) == ["charge-1", "charge-2", "charge-3"]


def test_stale_missing_and_malformed_decisions_are_refused_and_run_nothing(shared: Shared) -> None:
    server = shared.server
    cid, events = run(server, {"message": "pay 9 (stale)"})
    call = events[-2][1]["calls"][0]

    def resume(decisions: Any) -> httpx.Response:
        return server.post("/api/chat", {"conversation": cid, "resume": True, "decisions": decisions})

    new_message = server.post("/api/chat", {"conversation": cid, "message": "never mind"})
    assert new_message.status_code == 409 and new_message.json()["error"]["code"] == "DECISION_REQUIRED"
    for other_branch in ({"message": "pay 1 instead", "editOf": 0}, {"regenerate": True}):
        forked = server.post("/api/chat", {"conversation": cid, **other_branch})  # leaving the question behind
        assert forked.status_code == 409 and forked.json()["error"]["code"] == "DECISION_REQUIRED", other_branch
    blind = server.post("/api/chat", {"conversation": cid, "resume": True})
    assert blind.status_code == 409 and blind.json()["error"]["code"] == "DECISION_REQUIRED"
    for legacy in ("retry", "skip"):  # answers no unknown outcome here, so it answers nothing
        aside = server.post("/api/chat", {"conversation": cid, "resume": True, "decision": legacy})
        assert aside.status_code == 409 and aside.json()["error"]["code"] == "DECISION_REQUIRED", legacy
    for bad in (
        {},
        [],
        {call["id"]: {"type": "maybe"}},
        {call["id"]: "approve"},
        {call["id"]: {"type": "approve", "args": {"amount": 1}}},
        {call["id"]: {"type": "edit"}},
        {call["id"]: {"type": "reject", "message": 3}},
        {call["id"]: {"type": "reject", "always": True}},
    ):
        response = resume(bad)
        assert response.status_code == 400 and response.json()["error"]["code"] == "BAD_REQUEST", bad
    stale = resume({"call_that_does_not_exist": {"type": "approve"}})
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "STALE_DECISION"
    unknown = resume({call["id"]: {"type": "retry"}})  # not an unknown-outcome call
    assert unknown.status_code == 409 and unknown.json()["error"]["code"] == "STALE_DECISION"
    assert shared.charges(cid) == [] and waiting_calls(server, cid) == [call]

    run(server, {"conversation": cid, "resume": True, "decisions": {call["id"]: {"type": "approve"}}})
    again = resume({call["id"]: {"type": "approve"}})  # a second tab, a double click
    assert again.status_code == 409 and again.json()["error"]["code"] == "STALE_DECISION"
    assert len(shared.charges(cid)) == 1  # the stale decision ran nothing


def slow_ledger_entry(book: Path, delay: float) -> dict[str, Any]:
    """The ledger server, started `delay` seconds late: a run that needs it waits before
    its tool call is journaled or sent, long enough to kill its process."""
    entry = ledger_server_entry(book)
    command = " ".join([entry["command"], *entry["args"]])
    return {**entry, "command": "/bin/sh", "args": ["-c", f"sleep {delay}; exec {command}"]}


def status_of(server: LiveServer, cid: str) -> str:
    return str(detail(server, cid)["conversation"]["status"])


def wait_for_status(server: LiveServer, cid: str, wanted: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while status_of(server, cid) != wanted:
        assert time.monotonic() < deadline, f"the conversation never became {wanted}: {detail(server, cid)}"
        time.sleep(0.1)


@pytest.mark.parametrize("auto_resume", [True, False], ids=["with AUTO_RESUME", "resumed by hand"])
def test_an_approval_survives_a_kill_right_after_it_and_the_call_then_runs_exactly_once(
    tmp_path: Path, auto_resume: bool
) -> None:
    book = tmp_path / "ledger.jsonl"
    with sophos(tmp_path, [pay(5), {"text": "paid"}]) as (first, fake, _):
        cid, events = run(first, {"message": "pay 5"})
        call = events[-2][1]["calls"][0]
        first.kill()  # kill -9 while waiting

        config_dir(tmp_path, {"ledger": slow_ledger_entry(book, 10)})
        env = app_env(tmp_path, fake.url, TOOL_APPROVAL="unsafe")
        second = LiveServer(env, tmp_path).start()
        try:
            assert status_of(second, cid) == "waiting"  # a restart keeps the question
            assert waiting_calls(second, cid) == [call]
            approved = second.post(
                "/api/chat", {"conversation": cid, "resume": True, "decisions": {call["id"]: {"type": "approve"}}}
            )
            assert approved.status_code == 200, approved.text
            second.kill()  # kill -9 right after approving: the call had not started
        finally:
            second.stop()
        assert charges(book) == []

        config_dir(tmp_path, {"ledger": ledger_server_entry(book)})
        third = LiveServer(
            app_env(tmp_path, fake.url, TOOL_APPROVAL="unsafe", AUTO_RESUME=str(auto_resume).lower()), tmp_path
        ).start()
        try:
            if not auto_resume:
                assert status_of(third, cid) == "interrupted" and "pendingApprovals" not in detail(third, cid)
                assert third.post("/api/chat", {"conversation": cid, "resume": True}).status_code == 200
            wait_for_status(third, cid, "completed")
        finally:
            third.stop()
    executed = charges(book)
    assert [e["key"] for e in executed] == [f"{cid}:{call['id']}"]  # exactly once, with the same key


def test_the_core_flow_works_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    with sophos(tmp_path, [pay(7, 8), {"text": "done"}], DATABASE_URL=pg_url) as (server, fake, book):
        cid, events = run(server, {"message": "pay 7 and 8"})
        assert events[-1][1]["status"] == "waiting" and charges(book) == []
        calls = {c["args"]["amount"]: c for c in waiting_calls(server, cid)}
        assert sorted(calls) == [7, 8]
        stale = server.post("/api/chat", {"conversation": cid, "resume": True, "decisions": {"nope": {"type": "approve"}}})
        assert stale.status_code == 409 and stale.json()["error"]["code"] == "STALE_DECISION"
        refused = server.post("/api/chat", {"conversation": cid, "message": "hello"})
        assert refused.status_code == 409 and refused.json()["error"]["code"] == "DECISION_REQUIRED"
        decisions = {calls[7]["id"]: {"type": "approve"}, calls[8]["id"]: {"type": "reject", "message": "too much"}}
        _, events = run(server, {"conversation": cid, "resume": True, "decisions": decisions})
        assert events[-1][1]["status"] == "completed"
        assert [e["label"] for e in charges(book)] == ["charge-7"]
        assert "too much" in json.dumps(fake.requests[-1]["messages"])


def test_an_unanswered_call_is_rejected_by_itself_after_approval_timeout(tmp_path: Path) -> None:
    replies = [pay(5), {"text": "nobody answered"}]
    with sophos(tmp_path, replies, APPROVAL_TIMEOUT="1", RUN_LEASE_SECONDS="1.5") as (server, fake, book):
        cid, events = run(server, {"message": "pay 5"})
        assert events[-1][1]["status"] == "waiting"
        wait_for_status(server, cid, "completed", timeout=30)
        assert charges(book) == []
        assert "No answer within APPROVAL_TIMEOUT (1 s)" in json.dumps(fake.requests[-1]["messages"])


def test_the_decisions_map_also_answers_an_unknown_outcome_with_skip(tmp_path: Path) -> None:
    replies = [{"tool_calls": [("ledger__charge", {"amount": 5, "delay": 5})]}, {"text": "skipped"}]
    with sophos(tmp_path, replies, TOOL_APPROVAL="off") as (server, fake, book):
        started = server.post("/api/chat", {"message": "pay 5"}).json()
        cid = started["conversation"]
        deadline = time.monotonic() + 60
        while not charges(book):
            assert time.monotonic() < deadline, "the charge never started"
            time.sleep(0.02)
        os.kill(charges(book)[0]["pid"], signal.SIGKILL)  # the tool server dies mid-call
        wait_for_status(server, cid, "failed")
        body = detail(server, cid)
        assert body["decisionRequired"] and "pendingApprovals" not in body
        call_id = body["pendingToolCalls"][0]["id"]
        approve = server.post("/api/chat", {"conversation": cid, "resume": True, "decisions": {call_id: {"type": "approve"}}})
        assert approve.status_code == 409 and approve.json()["error"]["code"] == "STALE_DECISION"  # not an approval
        _, events = run(server, {"conversation": cid, "resume": True, "decisions": {call_id: {"type": "skip"}}})
        assert events[-1][1]["status"] == "completed"
    assert len(charges(book)) == 1  # sent once, never again


def test_the_cli_asks_edits_and_rejects_through_a_running_server(shared: Shared) -> None:
    env = process_env({"API_TOKEN": ""})

    def sophos_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [SOPHOS, *args, "--server", shared.server.url], env=env, capture_output=True, text=True, timeout=120
        )

    asked = sophos_cli("chat", "pay 12 (remote)")
    assert asked.returncode == 7, asked.stderr
    cid = re.search(r"conversation: (\S+)", asked.stderr).group(1)  # type: ignore[union-attr]
    assert '? ledger__charge {"amount": 12} waits for approval' in asked.stderr and shared.charges(cid) == []
    blocked = sophos_cli("chat", "-c", cid, "never mind")
    assert blocked.returncode == 4 and "DECISION_REQUIRED" in blocked.stderr
    edited = sophos_cli("approve", cid, "--edit-args", '{"amount": 11}')
    assert edited.returncode == 0, edited.stderr
    assert "done: Note: the user edited" in edited.stdout
    assert [e["label"] for e in shared.charges(cid)] == ["charge-11"]
    again = sophos_cli("approve", cid)
    assert again.returncode == 4 and again.stderr.startswith("error: STALE_DECISION: ")

    asked = sophos_cli("chat", "pay 13 (remote, rejected)")
    cid = re.search(r"conversation: (\S+)", asked.stderr).group(1)  # type: ignore[union-attr]
    rejected = sophos_cli("approve", cid, "--reject", "budget is spent")
    assert rejected.returncode == 0, rejected.stderr
    assert shared.charges(cid) == [] and "budget is spent" in shared.prompts("pay 13 (remote, rejected)")[-1]


def test_always_allow_is_remembered_listed_and_revoked_through_the_api(shared: Shared) -> None:
    # last in the module: while the rule exists, no charge on the shared server asks
    server = shared.server
    cid, events = run(server, {"message": "pay 21 (always)"})
    call = events[-2][1]["calls"][0]
    try:
        decisions = {call["id"]: {"type": "approve", "always": True}}
        assert run(server, {"conversation": cid, "resume": True, "decisions": decisions})[1][-1][1]["status"] == "completed"
        rules = server.get("/api/approvals/always").json()["alwaysAllowed"]
        assert [r["tool"] for r in rules] == ["ledger__charge"] and rules[0]["since"].endswith("Z")
        trusted, events = run(server, {"message": "pay 22 (trusted)"})
        assert events[-1][1]["status"] == "completed" and "approval" not in [e for e, _ in events]
        assert [e["label"] for e in shared.charges(cid) + shared.charges(trusted)] == ["charge-21", "charge-22"]
    finally:
        revoked = httpx.delete(f"{server.url}/api/approvals/always/ledger__charge", timeout=30)
    assert revoked.status_code == 204
    gone = httpx.delete(f"{server.url}/api/approvals/always/ledger__charge", timeout=30)
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "NOT_FOUND"
    asked, events = run(server, {"message": "pay 23 (asked again)"})
    assert events[-1][1]["status"] == "waiting" and shared.charges(asked) == []

    # a tool's name may hold a "/" (an MCP server names its tools): its rule can be revoked too
    for tool in ("web__get/page", "web__get/other"):
        with closing(sqlite3.connect(shared.db)) as conn, conn:
            conn.execute("INSERT INTO tool_allow_rules (tool, since) VALUES (?, '2026-12-04T00:00:00.000Z')", (tool,))
    assert {r["tool"] for r in server.get("/api/approvals/always").json()["alwaysAllowed"]} >= {"web__get/page"}
    assert httpx.delete(f"{server.url}/api/approvals/always/web__get%2Fpage", timeout=30).status_code == 204
    assert httpx.delete(f"{server.url}/api/approvals/always/web__get/other", timeout=30).status_code == 204
    assert server.get("/api/approvals/always").json().get("alwaysAllowed", []) == []


def test_a_question_keeps_its_branch_shown_until_it_is_answered(shared: Shared) -> None:
    server = shared.server
    cid, events = run(server, {"message": "say hello (branch test)"})
    assert events[-1][1]["status"] == "completed"
    _, events = run(server, {"conversation": cid, "message": "pay 31 (on a branch)", "editOf": 0})
    call = events[-2][1]["calls"][0]
    assert detail(server, cid)["activeBranch"] == 2 and [c["id"] for c in waiting_calls(server, cid)] == [call["id"]]

    refused = server.patch(f"/api/conversations/{cid}", {"activeBranch": 1})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "DECISION_REQUIRED"
    assert detail(server, cid)["activeBranch"] == 2 and [c["id"] for c in waiting_calls(server, cid)] == [call["id"]]
    _, events = run(server, {"conversation": cid, "resume": True, "decisions": {call["id"]: {"type": "approve"}}})
    assert events[-1] == ("end", {"conversation": cid, "status": "completed"})
    assert [e["label"] for e in shared.charges(cid)] == ["charge-31"]
    shown = server.patch(f"/api/conversations/{cid}", {"activeBranch": 1})
    assert shown.status_code == 200 and shown.json()["messages"][0]["content"] == "say hello (branch test)"


@contextmanager
def sophos_on_openai(tmp_path: Path, replies: list[dict[str, Any]]) -> Iterator[tuple[LiveServer, Path]]:
    """A server on an OpenAI-compatible model that numbers its tool calls `call_0`, `call_1`
    in every response, as llama.cpp and vLLM do."""
    from tests.support.fake_openai import fake_openai

    book = tmp_path / "ledger.jsonl"
    config_dir(tmp_path, {"ledger": ledger_server_entry(book)})
    with fake_openai(replies) as fake:
        env = app_env(
            tmp_path, TOOL_APPROVAL="unsafe", MODEL_BACKEND="openai", OPENAI_BASE_URL=fake.url, OPENAI_MODEL="local-model"
        )
        server = LiveServer(env, tmp_path).start()
        try:
            yield server, book
        finally:
            server.stop()


def approve_all(server: LiveServer, cid: str, calls: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    _, events = run(server, {"conversation": cid, "resume": True, "decisions": {c["id"]: {"type": "approve"} for c in calls}})
    return events


def test_every_call_is_its_own_question_even_when_the_model_server_reuses_its_ids(tmp_path: Path) -> None:
    replies: list[dict[str, Any]] = [
        pay(5),
        {"text": "paid 5"},  # call_0
        pay(500),
        {"text": "paid 500"},  # call_0 again, a later turn
        {**pay(7, 8), "ids": ["dup", "dup"]},
        {"text": "paid 7 and 8"},  # one id twice in one step
        {**pay(9), "ids": [""]},
        {"text": "paid 9"},  # no id at all
    ]
    with sophos_on_openai(tmp_path, replies) as (server, book):
        cid, events = run(server, {"message": "pay 5"})
        first = events[-2][1]["calls"]
        assert approve_all(server, cid, first)[-1][1]["status"] == "completed"
        assert [e["label"] for e in charges(book)] == ["charge-5"]

        # the same model id in a later turn: asked again, with its own arguments
        _, events = run(server, {"conversation": cid, "message": "pay 500"})
        assert events[-1][1]["status"] == "waiting", events
        second = waiting_calls(server, cid)
        assert [c["args"] for c in second] == [{"amount": 500}] and second[0]["id"] != first[0]["id"]
        assert [e["label"] for e in charges(book)] == ["charge-5"]  # nothing ran unasked
        assert approve_all(server, cid, second)[-1][1]["status"] == "completed"

        # two calls sharing an id in one step: two questions, each answered on its own
        _, events = run(server, {"conversation": cid, "message": "pay 7 and 8"})
        pair = {c["args"]["amount"]: c for c in waiting_calls(server, cid)}
        assert sorted(pair) == [7, 8] and pair[7]["id"] != pair[8]["id"]
        decisions = {pair[7]["id"]: {"type": "approve"}, pair[8]["id"]: {"type": "reject"}}
        _, events = run(server, {"conversation": cid, "resume": True, "decisions": decisions})
        assert events[-1][1]["status"] == "completed"

        # a call with no id can be decided
        _, events = run(server, {"conversation": cid, "message": "pay 9"})
        nine = waiting_calls(server, cid)
        assert [c["args"] for c in nine] == [{"amount": 9}] and nine[0]["id"]
        assert approve_all(server, cid, nine)[-1][1]["status"] == "completed"

    executed = charges(book)
    assert [e["label"] for e in executed] == ["charge-5", "charge-500", "charge-7", "charge-9"]
    assert len({e["key"] for e in executed}) == 4  # four calls, four idempotency keys
