"""Edit, regenerate and branches through a real `sophos serve` on a real SQLite file: the
API, exports, the search index, a restart and a kill -9 mid-run on a branch."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.test_search import expected, indexed, search
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.server import LiveServer


class Answers:
    """A model that numbers its answers, so each branch's answer is told apart."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.n += 1
        last = body["messages"][-1]["content"]
        return {"text": f"answer {self.n} to {last}"}


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOllama]:
    with fake_ollama() as fake:
        fake.responder = Answers()
        yield fake


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, model: FakeOllama) -> Iterator[LiveServer]:
    tmp_path = tmp_path_factory.mktemp("branches")
    live = LiveServer(app_env(tmp_path, model.url, TOOLS_BACKEND="none"), tmp_path).start()
    yield live
    live.stop()


def settled(server: LiveServer, cid: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        detail: dict[str, Any] = server.get(f"/api/conversations/{cid}").json()
        if detail["conversation"]["status"] not in (None, "running") and "activeRun" not in detail:
            return detail
        time.sleep(0.05)
    raise AssertionError(f"{cid} kept running")


def wait_until(predicate: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def post(server: LiveServer, body: dict[str, Any]) -> dict[str, Any]:
    r = server.post("/api/chat", body)
    assert r.status_code == 200, r.text
    return settled(server, r.json()["conversation"])


def switch(server: LiveServer, cid: str, number: int) -> httpx.Response:
    return httpx.patch(f"{server.url}/api/conversations/{cid}", json={"activeBranch": number}, timeout=30)


def texts(detail: dict[str, Any]) -> list[str]:
    return [m["content"] for m in detail["messages"]]


def marks(detail: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {i: m["branch"] for i, m in enumerate(detail["messages"]) if "branch" in m}


def two_turns(server: LiveServer, first: str, second: str) -> tuple[str, dict[str, Any]]:
    detail = post(server, {"message": first})
    cid = detail["conversation"]["id"]
    return cid, post(server, {"message": second, "conversation": cid})


def test_an_edit_answers_on_a_new_branch_and_the_detail_marks_the_alternatives(server: LiveServer) -> None:
    cid, before = two_turns(server, "kiwi one", "kiwi two")
    assert before["activeBranch"] == 1 and before["branchCount"] == 1 and marks(before) == {}
    edited = post(server, {"conversation": cid, "message": "kiwi two, edited", "editOf": 2})
    assert texts(edited)[:3] == ["kiwi one", before["messages"][1]["content"], "kiwi two, edited"]
    assert texts(edited)[3].endswith("to kiwi two, edited") and len(edited["messages"]) == 4
    assert edited["activeBranch"] == 2 and edited["branchCount"] == 2
    assert marks(edited) == {2: {"index": 2, "count": 2, "branches": [1, 2]}}
    listed = {c["id"]: c for c in server.get("/api/conversations").json()["conversations"]}
    assert listed[cid]["messageCount"] == 4 and listed[cid]["status"] == "completed"

    back = switch(server, cid, 1)
    assert back.status_code == 200, back.text
    assert texts(back.json()) == texts(before) and marks(back.json()) == {2: {"index": 1, "count": 2, "branches": [1, 2]}}
    assert texts(server.get(f"/api/conversations/{cid}").json()) == texts(before)  # the switch is stored


def test_regenerate_answers_the_last_message_again_and_keeps_every_answer(server: LiveServer) -> None:
    first = post(server, {"message": "plum question"})
    cid = first["conversation"]["id"]
    again = post(server, {"conversation": cid, "regenerate": True})
    third = post(server, {"conversation": cid, "regenerate": True})
    answers = [first["messages"][1]["content"], again["messages"][1]["content"], third["messages"][1]["content"]]
    assert len(set(answers)) == 3 and all(a.endswith("to plum question") for a in answers)
    assert marks(third) == {1: {"index": 3, "count": 3, "branches": [1, 2, 3]}}
    for number, answer in enumerate(answers, start=1):
        detail = switch(server, cid, number).json()
        assert texts(detail) == ["plum question", answer] and detail["activeBranch"] == number
        assert marks(detail)[1]["index"] == number


def test_branches_of_branches_keep_their_own_messages(server: LiveServer) -> None:
    cid, _ = two_turns(server, "fig a", "fig b")
    post(server, {"conversation": cid, "message": "fig b2", "editOf": 2})  # branch 2
    post(server, {"conversation": cid, "message": "fig c", "editOf": 0})  # branch 3, a new root
    on3 = post(server, {"conversation": cid, "message": "fig d"})
    assert marks(on3) == {0: {"index": 2, "count": 2, "branches": [1, 3]}}
    shown = {n: texts(switch(server, cid, n).json()) for n in (1, 2, 3)}
    assert [t for i, t in enumerate(shown[1]) if i % 2 == 0] == ["fig a", "fig b"]
    assert [t for i, t in enumerate(shown[2]) if i % 2 == 0] == ["fig a", "fig b2"]
    assert [t for i, t in enumerate(shown[3]) if i % 2 == 0] == ["fig c", "fig d"]
    assert shown[1][1] == shown[2][1]  # the shared answer before the fork


@pytest.mark.parametrize(
    "body, code, message",
    [
        ({"message": "x", "editOf": 1}, "INVALID_EDIT", "editOf 1 is not a user message"),
        ({"message": "x", "editOf": 7}, "INVALID_EDIT", "editOf 7 is out of range: the conversation has 2 messages"),
        ({"message": "x", "editOf": -1}, "INVALID_EDIT", "editOf -1 is out of range: the conversation has 2 messages"),
        ({"message": "x", "editOf": "0"}, "INVALID_EDIT", "editOf must be a message index (an integer)"),
        ({"editOf": 0}, "BAD_REQUEST", "Message is required"),
        ({"message": "x", "editOf": 0, "regenerate": True}, "BAD_REQUEST", "resume, editOf and regenerate cannot be combined"),
    ],
)
def test_a_bad_edit_is_a_400_with_a_clear_code(server: LiveServer, body: dict[str, Any], code: str, message: str) -> None:
    cid = post(server, {"message": "pear"})["conversation"]["id"]
    r = server.post("/api/chat", {"conversation": cid, **body})
    assert r.status_code == 400 and r.json() == {"error": {"code": code, "message": message}}
    assert len(server.get(f"/api/conversations/{cid}").json()["messages"]) == 2  # nothing changed


def test_regenerate_and_switch_need_a_conversation_and_a_branch(server: LiveServer) -> None:
    r = server.post("/api/chat", {"regenerate": True})
    assert r.status_code == 400 and r.json()["error"]["message"] == "A conversation is required to edit or regenerate"
    cid = post(server, {"message": "quince"})["conversation"]["id"]
    for value, message in ((9, "Branch 9 does not exist"), ("1", "activeBranch must be a branch number (an integer)")):
        r = switch(server, cid, value)  # type: ignore[arg-type]
        assert r.status_code == 400 and r.json() == {"error": {"code": "BRANCH_NOT_FOUND", "message": message}}
    assert switch(server, cid, 1).status_code == 200  # the one branch a conversation always has


def test_edit_regenerate_and_switch_are_refused_while_a_run_is_active(server: LiveServer, model: FakeOllama) -> None:
    cid = post(server, {"message": "lime"})["conversation"]["id"]
    post(server, {"conversation": cid, "regenerate": True})
    model.add({"text": "slow lime answer", "token_delay": 0.5})
    assert server.post("/api/chat", {"conversation": cid, "message": "lime 2"}).status_code == 200
    busy = {"error": {"code": "SESSION_IN_PROGRESS", "message": "Previous request still in progress"}}
    for r in (
        server.post("/api/chat", {"conversation": cid, "message": "x", "editOf": 0}),
        server.post("/api/chat", {"conversation": cid, "regenerate": True}),
        switch(server, cid, 1),
    ):
        assert r.status_code == 409 and r.json() == busy
    assert settled(server, cid)["activeBranch"] == 2


def test_markdown_exports_the_active_branch_and_jsonl_every_checkpoint_with_its_branch(server: LiveServer) -> None:
    cid, _ = two_turns(server, "olive first", "olive second")
    post(server, {"conversation": cid, "message": "olive other", "editOf": 2})
    markdown = server.get(f"/api/conversations/{cid}/export").text
    assert "olive other" in markdown and "olive second" not in markdown and "- Branch: 2 of 2" in markdown
    lines = [json.loads(line) for line in server.get(f"/api/conversations/{cid}/export?format=jsonl").text.splitlines()]
    assert [line["branch"] for line in lines] == sorted(line["branch"] for line in lines)
    assert {line["branch"] for line in lines} == {1, 2}
    contents = [(line["branch"], (line["last_message"] or {}).get("content") or "") for line in lines]
    # a later turn's message has no checkpoint of its own (it waits as pending input): the answer names it
    assert any(b == 1 and "olive second" in c for b, c in contents) and (2, "olive other") in contents
    switch(server, cid, 1)
    assert "olive second" in server.get(f"/api/conversations/{cid}/export").text


def test_the_search_index_follows_the_active_branch(server: LiveServer) -> None:
    db = Path(server.env["DATABASE_PATH"])
    cid, _ = two_turns(server, "walrus tusks", "narwhal horn")
    post(server, {"conversation": cid, "message": "beluga song", "editOf": 2})
    assert indexed(db, cid) == expected(server, cid)
    assert {r["conversation"] for r in search(server, "beluga")["results"]} == {cid}
    assert cid not in {r["conversation"] for r in search(server, "narwhal")["results"]}
    switch(server, cid, 1)
    assert indexed(db, cid) == expected(server, cid)
    assert cid in {r["conversation"] for r in search(server, "narwhal")["results"]}
    assert cid not in {r["conversation"] for r in search(server, "beluga")["results"]}


def test_deleting_a_conversation_removes_its_branches(server: LiveServer) -> None:
    cid = post(server, {"message": "date"})["conversation"]["id"]
    post(server, {"conversation": cid, "regenerate": True})
    assert httpx.delete(f"{server.url}/api/conversations/{cid}", timeout=30).status_code == 204
    conn = sqlite3.connect(server.env["DATABASE_PATH"])
    try:
        assert conn.execute("SELECT count(*) FROM branches WHERE conversation_id = ?", (cid,)).fetchone() == (0,)
    finally:
        conn.close()


def test_branches_survive_a_restart_and_a_kill_mid_run_resumes_on_its_branch(tmp_path: Path) -> None:
    with fake_ollama() as fake:
        fake.responder = Answers()
        live = LiveServer(app_env(tmp_path, fake.url, TOOLS_BACKEND="none"), tmp_path).start()
        try:
            cid, before = two_turns(live, "mango one", "mango two")
            post(live, {"conversation": cid, "message": "mango edited", "editOf": 2})
            fake.add({"stall": 30})  # the next answer never comes: the process dies waiting
            asked = len(fake.requests)
            assert live.post("/api/chat", {"conversation": cid, "message": "mango edited", "editOf": 2}).status_code == 200
            wait_until(lambda: any("messages" in r for r in fake.requests[asked:]))  # mid-run: asking the model
            live.signal(signal.SIGKILL)
            live.wait(10)
        finally:
            live.stop()
        live = LiveServer(app_env(tmp_path, fake.url, TOOLS_BACKEND="none"), tmp_path, port=None).start()
        try:
            detail = settled(live, cid)  # the dead process's run is reclaimed as interrupted
            assert detail["conversation"]["status"] == "interrupted"
            assert detail["activeBranch"] == 3 and detail["resumable"] is True
            assert texts(detail) == ["mango one", before["messages"][1]["content"], "mango edited"]
            r = live.post("/api/chat", {"conversation": cid, "resume": True})
            assert r.status_code == 200, r.text
            resumed = settled(live, cid)
            assert resumed["conversation"]["status"] == "completed", resumed["conversation"]
            assert resumed["activeBranch"] == 3 and texts(resumed)[3].endswith("to mango edited")
            assert marks(resumed)[2] == {"index": 3, "count": 3, "branches": [1, 2, 3]}
            assert texts(switch(live, cid, 1).json()) == texts(before)
            assert texts(switch(live, cid, 2).json())[2] == "mango edited"
        finally:
            live.stop()
        live = LiveServer(app_env(tmp_path, fake.url, TOOLS_BACKEND="none"), tmp_path).start()
        try:  # the switch made before the restart is what the next process sees
            assert live.get(f"/api/conversations/{cid}").json()["activeBranch"] == 2
            assert texts(switch(live, cid, 3).json())[3].endswith("to mango edited")
        finally:
            live.stop()
