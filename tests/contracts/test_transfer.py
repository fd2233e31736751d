"""Export and import of whole conversations, on every storage backend, through the HTTP
app: export -> import -> export is the same file but for the conversation's id, every
branch and every message's metadata included; an import is all or nothing."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from entrypoints.container import create_container
from entrypoints.http.app import create_app
from tests.support.app import app_env

T0 = "2026-03-01T09:00:00.000Z"


def msg(role: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **extra}


def full_document(branches: bool = True) -> dict[str, Any]:
    """Everything the format holds: tool calls (with the model's own id), results (one an
    error), reasoning, the context view, a cut answer, a summary, approvals decided every
    way and one undecided; three branches, one an edit of the first message."""
    own = [
        msg("user", "charge the card 23"),
        msg(
            "assistant",
            "",
            toolCalls=[
                {"id": "call_aaa", "name": "ledger__charge", "args": {"amount": 23, "note": {"k": [1, 2]}}, "modelId": "call_0"}
            ],
            reasoning="the user asked for it",
        ),
        msg("tool", "charged 230", toolCallId="call_aaa", name="ledger__charge", status="success"),
        msg("summary", "The user charged the card.", covers=3),
        msg("assistant", "Done: 230.", context={"sentFrom": 3, "tokens": 812, "budget": 4096}),
        msg("user", "and again"),
        msg("assistant", "", toolCalls=[{"id": "call_bbb", "name": "ledger__charge", "args": {"amount": 1}}]),
        msg("tool", "Rejected: not twice", toolCallId="call_bbb", name="ledger__charge", status="error"),
        msg("assistant", "I did not charge it again because" + " really" * 20, cut=True),
    ]
    listed = [{"number": 1, "parent": None, "fork": 0, "messages": own}]
    if branches:
        listed += [
            {"number": 2, "parent": 1, "fork": 5, "messages": [msg("user", "and again, twice"), msg("assistant", "No.")]},
            {"number": 3, "parent": None, "fork": 0, "messages": [msg("user", "hello instead"), msg("assistant", "Hello!")]},
        ]
    approvals = [
        {
            "callId": "call_aaa",
            "tool": "ledger__charge",
            "args": {"amount": 23, "note": {"k": [1, 2]}},
            "server": "ledger",
            "description": "Charge the card",
            "requestedAt": T0,
            "decision": {"type": "edit", "args": {"amount": 230}},
            "decidedAt": "2026-03-01T09:00:05.000Z",
        },
        {
            "callId": "call_bbb",
            "tool": "ledger__charge",
            "args": {"amount": 1},
            "server": "ledger",
            "description": "",
            "requestedAt": T0,
            "decision": {"type": "reject", "message": "not twice"},
            "decidedAt": "2026-03-01T09:01:00.000Z",
        },
        {
            "callId": "call_ccc",
            "tool": "ledger__refund",
            "args": {},
            "server": "ledger",
            "description": "",
            "requestedAt": T0,
            "decision": {"type": "approve", "always": True},
            "decidedAt": "2026-03-01T09:02:00.000Z",
        },
        {
            "callId": "call_ddd",
            "tool": "ledger__refund",
            "args": {"amount": 2},
            "server": "ledger",
            "description": "",
            "requestedAt": T0,
            "decision": None,
            "decidedAt": None,
        },
    ]
    return {
        "format": "sophos.conversation",
        "version": 1,
        "conversation": {
            "title": "Everything kept",
            "createdAt": "2026-03-01T08:59:00.000Z",
            "updatedAt": "2026-03-01T09:05:00.000Z",
            "activeBranch": 2 if branches else 1,
            "branches": listed,
            "approvals": approvals,
        },
    }


def without_ids(doc: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["conversation"].pop("id", None)
    return out


def settled(client: TestClient, cid: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        detail: dict[str, Any] = client.get(f"/api/conversations/{cid}").json()
        if detail["conversation"]["status"] not in (None, "running") and "activeRun" not in detail:
            return detail
        time.sleep(0.05)
    raise AssertionError(f"{cid} kept running")


def chat(client: TestClient, body: dict[str, Any]) -> str:
    r = client.post("/api/chat", json=body)
    assert r.status_code == 200, r.text
    cid: str = r.json()["conversation"]
    settled(client, cid)
    return cid


def export(client: TestClient, cid: str) -> dict[str, Any]:
    r = client.get(f"/api/conversations/{cid}/export", params={"format": "json"})
    assert r.status_code == 200, r.text
    doc: dict[str, Any] = r.json()
    return doc


def import_(client: TestClient, doc: Any) -> list[dict[str, Any]]:
    r = client.post("/api/import", content=json.dumps(doc).encode())
    assert r.status_code == 201, r.text
    items: list[dict[str, Any]] = r.json()["conversations"]
    return items


def ids(client: TestClient) -> set[str]:
    return {c["id"] for c in client.get("/api/conversations").json()["conversations"]}


class TransferContract:
    keeps_branches = True

    @pytest.fixture
    def env(self, tmp_path: Path) -> dict[str, str]:
        raise NotImplementedError

    @pytest.fixture
    def client(self, env: dict[str, str]) -> Iterator[TestClient]:
        with TestClient(create_app(create_container(env))) as client:
            yield client

    def test_a_full_document_round_trips_identically_but_for_ids(self, client: TestClient) -> None:
        doc = full_document(branches=self.keeps_branches)
        [summary] = import_(client, doc)
        assert (summary["title"], summary["createdAt"], summary["updatedAt"]) == (
            "Everything kept",
            "2026-03-01T08:59:00.000Z",
            "2026-03-01T09:05:00.000Z",
        )
        again = export(client, summary["id"])
        assert again["conversation"]["id"] == summary["id"]
        assert without_ids(again) == doc
        detail = client.get(f"/api/conversations/{summary['id']}").json()
        assert detail["resumable"] is False and "pendingToolCalls" not in detail  # an import never runs anything
        assert summary["messageCount"] == len(detail["messages"])

    def test_a_conversation_made_here_round_trips_with_every_branch(self, client: TestClient) -> None:
        cid = chat(client, {"message": "first question"})
        chat(client, {"conversation": cid, "message": "second question"})
        if self.keeps_branches:
            chat(client, {"conversation": cid, "message": "second, edited", "editOf": 2})
            chat(client, {"conversation": cid, "regenerate": True})
        first = export(client, cid)
        [summary] = import_(client, first)
        assert summary["id"] != cid and summary["messageCount"] == settled(client, cid)["conversation"]["messageCount"]
        assert without_ids(export(client, summary["id"])) == without_ids(first)
        if self.keeps_branches:
            assert len(first["conversation"]["branches"]) == 3
            original, copied = (client.get(f"/api/conversations/{c}").json() for c in (cid, summary["id"]))
            assert [m["branch"] for m in copied["messages"] if "branch" in m] == [
                m["branch"] for m in original["messages"] if "branch" in m
            ]
            back = client.patch(f"/api/conversations/{summary['id']}", json={"activeBranch": 1})
            assert [m["content"] for m in back.json()["messages"]][:3] == [
                "first question",
                first["conversation"]["branches"][0]["messages"][1]["content"],
                "second question",
            ]
        # and the copy goes on as any conversation does
        chat(client, {"conversation": summary["id"], "message": "after the import"})
        assert settled(client, summary["id"])["messages"][-2]["content"] == "after the import"

    def test_importing_the_same_file_twice_gives_two_conversations_and_overwrites_nothing(self, client: TestClient) -> None:
        doc = full_document(branches=self.keeps_branches)
        a = import_(client, doc)[0]["id"]
        b = import_(client, doc)[0]["id"]
        assert a != b and {a, b} <= ids(client)
        assert without_ids(export(client, a)) == without_ids(export(client, b)) == doc

    def test_the_chatgpt_sample_becomes_branches_with_the_current_path_active(self, client: TestClient) -> None:
        sample = Path(__file__).parents[1] / "fixtures" / "chatgpt" / "conversations.json"
        data = json.loads(sample.read_text())
        if not self.keeps_branches:
            data = data[1:]  # the trip has three branches
        imported = import_(client, data)
        by_title = {c["title"]: c for c in imported}
        weather = client.get(f"/api/conversations/{by_title['Weather in Paris']['id']}").json()
        assert [(m["role"], m["content"]) for m in weather["messages"]] == [  # no browser call; the image marked
            ("user", "[image not imported]\nWhat is the weather in Paris today?"),
            ("assistant", "18 °C and cloudy."),
        ]
        assert by_title["Weather in Paris"]["createdAt"] == "2024-05-02T08:53:20.000Z"
        if self.keeps_branches:
            trip = client.get(f"/api/conversations/{by_title['Planning a trip']['id']}").json()
            assert [m["content"] for m in trip["messages"]] == ["Where should I go in May?", "Porto, for the river and the food."]
            assert (trip["activeBranch"], trip["branchCount"]) == (2, 3)
            edited = client.patch(f"/api/conversations/{trip['conversation']['id']}", json={"activeBranch": 3}).json()
            assert [m["content"] for m in edited["messages"]] == [
                "Where should I go in spring?",
                "Kyoto, for the cherry blossom.",
            ]
            first = client.patch(f"/api/conversations/{trip['conversation']['id']}", json={"activeBranch": 1}).json()
            assert [m["content"] for m in first["messages"]][-1] == "The Azores."

    def test_a_malformed_file_stores_nothing(self, client: TestClient) -> None:
        before = ids(client)
        bad = full_document(branches=self.keeps_branches)
        bad["conversation"]["branches"][0]["messages"][3]["covers"] = "three"
        good = full_document(branches=self.keeps_branches)
        r = client.post("/api/import", content=json.dumps([good, bad]).encode())  # the good one neither
        assert r.status_code == 400
        assert r.json()["error"] == {
            "code": "BAD_REQUEST",
            "message": "conversation 2: branches[0].messages[3].covers must be an integer of at least 0",
        }
        assert ids(client) == before


class TestSqliteTransfer(TransferContract):
    @pytest.fixture
    def env(self, tmp_path: Path) -> dict[str, str]:
        return app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")


class TestPostgresTransfer(TransferContract):
    @pytest.fixture
    def env(self, tmp_path: Path, pg_url: str) -> dict[str, str]:
        return app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none", DATABASE_URL=pg_url)


class TestMemoryTransfer(TransferContract):
    keeps_branches = False  # the memory saver keeps the latest checkpoint only

    @pytest.fixture
    def env(self, tmp_path: Path) -> dict[str, str]:
        return app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none", STORAGE_BACKEND="memory")

    def test_several_branches_are_refused_before_anything_is_kept(self, client: TestClient) -> None:
        r = client.post("/api/import", content=json.dumps(full_document(branches=True)).encode())
        assert r.status_code == 501 and r.json()["error"]["code"] == "NOT_SUPPORTED"
        assert ids(client) == set()
