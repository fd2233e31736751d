"""The audit log (issue 47 item 4), on SQLite and PostgreSQL: a scripted session's actions are
its rows, in order, with who and from where (the client's address over HTTP, `cli:<os user>`
for this machine's commands); only admins read it, and nothing in the API changes a row."""

from __future__ import annotations

import getpass
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.support.cli import sophos
from tests.support.fake_ollama import FakeOllama
from tests.support.metering import Setup, start_setup, turn


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def setup(request: pytest.FixtureRequest, tmp_path: Path, ollama: FakeOllama) -> Iterator[Setup]:
    database = {"DATABASE_URL": request.getfixturevalue("pg_url")} if request.param == "postgres" else {}
    made = start_setup(tmp_path, ollama, database, TOOL_APPROVAL="all")
    yield made
    made.client.__exit__(None, None, None)


def entries(setup: Setup, **params: Any) -> list[dict[str, Any]]:
    answer = setup.client.get("/api/audit", params=params, headers=setup.tokens["admin"])
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["entries"]
    return found


def scripted_session(setup: Setup, ollama: FakeOllama, tmp_path: Path) -> str:
    """Every kind of action the audit log records, by ann over HTTP and by the operator's CLI."""
    c, ann = setup.client, setup.tokens["ann"]
    assert c.post("/api/session", json={"token": "sophos_" + "x" * 43}).status_code == 401
    assert c.post("/api/session", json={"token": ann["Authorization"][7:]}).status_code == 200
    c.cookies.clear()  # from here on each request names its caller by its bearer token
    assert c.put("/api/presets/defaults", json={"system": "Be brief."}, headers=ann).status_code == 200
    ollama.add({"tool_calls": [("demo__clock", {})], "text": ""}, {"text": "Noon."})
    cid = turn(setup, "ann", {"message": "time?"})[0][1]
    (call,) = c.get(f"/api/conversations/{cid}", headers=ann).json()["pendingApprovals"]
    # a message queued behind the run waiting for approval, then dropped before it runs
    queued = c.post("/api/chat", json={"conversation": cid, "message": "and the date?", "multitask": "enqueue"}, headers=ann)
    assert queued.status_code == 200 and "queued" in queued.json(), queued.text
    qid = queued.json()["queued"]["id"]
    assert c.delete(f"/api/conversations/{cid}/queue/{qid}", headers=ann).status_code == 204
    decision = {call["id"]: {"type": "approve", "always": True}}
    assert turn(setup, "ann", {"conversation": cid, "resume": True, "decisions": decision})[-1][0] == "end"
    assert c.patch(f"/api/conversations/{cid}", json={"system": "Be kind."}, headers=ann).status_code == 200
    exported = c.get(f"/api/conversations/{cid}/export", params={"format": "json"}, headers=ann)
    assert exported.status_code == 200
    imported = c.post("/api/import", content=exported.content, headers={**ann, "Content-Type": "application/json"})
    assert imported.status_code == 201, imported.text
    assert c.delete(f"/api/approvals/always/{quote('demo__clock')}", headers=ann).status_code == 204
    assert c.delete(f"/api/conversations/{cid}", headers=ann).status_code == 204
    for args in (("users", "token", "bob"), ("users", "disable", "bob"), ("db", "prune", "--keep", "1")):
        done = sophos(setup.env, tmp_path, *args)
        assert done.returncode == 0, done.stderr
    return str(qid)


def test_a_scripted_sessions_actions_are_audit_rows_in_order(setup: Setup, ollama: FakeOllama, tmp_path: Path) -> None:
    first = entries(setup)[-1]["seq"]  # the users the setup made are rows of their own
    qid = scripted_session(setup, ollama, tmp_path)
    rows = [e for e in entries(setup) if e["seq"] > first]
    cli = f"cli:{getpass.getuser()}"
    assert [(e["actor"], e["action"], e["origin"]) for e in rows] == [
        ("unknown", "login.failed", "testclient"),
        ("ann", "login", "testclient"),
        ("ann", "preset.saved", "testclient"),
        ("ann", "queue.dropped", "testclient"),
        ("ann", "approval", "testclient"),
        ("ann", "rule.added", "testclient"),
        ("ann", "settings.changed", "testclient"),
        ("ann", "export", "testclient"),
        ("ann", "import", "testclient"),
        ("ann", "rule.revoked", "testclient"),
        ("ann", "conversation.deleted", "testclient"),
        ("admin", "token.issued", cli),
        ("admin", "user.disabled", cli),
        ("admin", "db.pruned", cli),
    ]
    assert rows[3]["detail"] == qid
    assert rows[4]["detail"].startswith("approve demo__clock") and rows[5]["target"] == "demo__clock"
    assert rows[6]["detail"] == "system" and rows[-2]["target"] == "bob"
    assert rows[-1]["target"] == "checkpoints" and rows[-1]["detail"].endswith("deleted, the latest 1 kept")
    assert [e["seq"] for e in rows] == sorted(e["seq"] for e in rows)
    # this machine's `sophos audit` reads the same rows
    done = sophos(setup.env, tmp_path, "audit", "--json")
    assert done.returncode == 0, done.stderr
    assert [e["seq"] for e in json.loads(done.stdout)["entries"] if e["seq"] > first] == [e["seq"] for e in rows]


def test_only_admins_read_the_audit_log_and_nothing_in_the_api_changes_it(setup: Setup) -> None:
    c = setup.client
    before = entries(setup)
    assert before, "the setup's user changes are rows"
    refused = c.get("/api/audit", headers=setup.tokens["ann"])
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "FORBIDDEN"
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        answer = c.request(method, "/api/audit", json={"seq": before[0]["seq"]}, headers=setup.tokens["admin"])
        assert answer.status_code == 405, (method, answer.text)
        gone = c.request(method, f"/api/audit/{before[0]['seq']}", headers=setup.tokens["admin"])
        assert gone.status_code in (404, 405), (method, gone.text)
    assert entries(setup) == before
    bad = c.get("/api/audit", params={"since": "last week"}, headers=setup.tokens["admin"])
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "BAD_REQUEST"
    assert entries(setup, since="2999-01-01") == []
