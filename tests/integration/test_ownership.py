"""Another user's ids reach nothing: an access test generated from the OpenAPI document.

For every operation that names a conversation (a path parameter, a `conversation` query
parameter or body field) or another id in its path, user B sends user A's ids. B must get
exactly the answer an unknown id gets (the ids aside: 404, or the stream's NOT_FOUND
event), so nothing tells B that A's conversation exists; and A's stored data must be the
same, byte for byte, before and after. A route added to the document is covered without
editing this test. Run on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient

from domain.model import utc_now
from domain.principals import Role
from entrypoints.container import create_container
from entrypoints.http.app import create_app
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama

SECRET = "zanzibarquokka"  # a word only A ever writes
SKIPPED_TABLES = {"login_sessions", "api_tokens"}  # B's own use writes there (B's last use)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def sqlite_rows(path: str) -> Callable[[], dict[str, list[Any]]]:
    def read() -> dict[str, list[Any]]:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            return {
                n: sorted(map(repr, conn.execute(f'SELECT * FROM "{n}"')))
                for n in names
                if n not in SKIPPED_TABLES and not n.startswith("sqlite_")
            }
        finally:
            conn.close()

    return read


def postgres_rows(url: str) -> Callable[[], dict[str, list[Any]]]:
    def read() -> dict[str, list[Any]]:
        with psycopg.connect(url) as conn:
            names = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
            return {
                n: sorted(map(repr, conn.execute(f'SELECT * FROM "{n}"').fetchall())) for n in names if n not in SKIPPED_TABLES
            }

    return read


@pytest.fixture(params=["sqlite", "postgres"])
def world(request: pytest.FixtureRequest, tmp_path: Path, ollama: FakeOllama) -> Iterator[dict[str, Any]]:
    env = app_env(tmp_path, ollama.url, TOOLS_BACKEND="none")
    if request.param == "postgres":
        url = request.getfixturevalue("pg_url")
        env.update(DATABASE_URL=url, STORAGE_BACKEND="postgres")
        rows = postgres_rows(url)
    else:
        rows = sqlite_rows(env["DATABASE_PATH"])
    with TestClient(create_app(create_container(env))) as client:
        users = client.app.state.services.users()  # type: ignore[attr-defined]
        tokens = {}
        for name in ("ann", "bob"):
            user = client.portal.call(users.add, name, Role.USER)  # type: ignore[union-attr]
            tokens[name] = client.portal.call(users.issue_token, user.id, "test").token  # type: ignore[union-attr]
        yield {"client": client, "tokens": tokens, "rows": rows}


def wait_idle(client: TestClient, token: str, cid: str) -> None:
    for _ in range(200):
        detail = client.get(f"/api/conversations/{cid}", headers=bearer(token)).json()
        if "activeRun" not in detail and not detail.get("queued"):
            return
        time.sleep(0.05)
    raise AssertionError(f"{cid} never went idle")


def a_conversation(client: TestClient, token: str) -> tuple[str, str]:
    """A's conversation with a finished turn, and the id of a message A queued behind a run."""
    first = client.post("/api/chat", json={"message": f"tell me about {SECRET}"}, headers=bearer(token))
    assert first.status_code == 200, first.text
    cid = first.json()["conversation"]
    queued = client.post(
        "/api/chat", json={"message": f"and more {SECRET}", "conversation": cid, "multitask": "enqueue"}, headers=bearer(token)
    )
    assert queued.status_code == 200, queued.text
    qid = queued.json().get("queued", {}).get("id", str(uuid.uuid4()))
    wait_idle(client, token, cid)
    return cid, qid


def sample(schema: dict[str, Any], name: str, ids: dict[str, str]) -> Any:
    if name in ids:
        return ids[name]
    kind = schema.get("type")
    return {"integer": 0, "number": 0, "boolean": True, "object": {}, "array": []}.get(str(kind), "hello")


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, ops in document["paths"].items():
        for method, op in ops.items():
            if method in ("get", "post", "patch", "put", "delete"):
                yield method.upper(), path, op


def names_an_id(path: str, op: dict[str, Any]) -> bool:
    """Whether the operation reaches stored data by an id: a path parameter, or a
    `conversation` query parameter or body field."""
    params = {p["name"] for p in op.get("parameters", []) if p["in"] in ("path", "query")}
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
    # a preset's {name} is no id: names are each user's own (test_presets.py checks they stay apart)
    return "{" in path.replace("{name}", "") or "conversation" in params or "conversation" in body.get("properties", {})


def request_for(method: str, path: str, op: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    url = path
    for p in op.get("parameters", []):
        if p["in"] == "path":
            url = url.replace("{" + p["name"] + "}", sample(p.get("schema", {}), p["name"], ids))
    query = {p["name"]: ids[p["name"]] for p in op.get("parameters", []) if p["in"] == "query" and p["name"] in ids}
    schema = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    body = None
    if schema is not None:
        props: dict[str, Any] = schema.get("properties", {})
        # the required fields (else the first one, a route's main field) and every id field
        chosen = list(dict.fromkeys([*(schema.get("required") or list(props)[:1]), *(n for n in props if n in ids)]))
        body = {n: sample(props.get(n, {}), n, ids) for n in chosen}
    return {"method": method, "url": url, "params": query, "json": body}


def masked(text: str, *ids: str) -> str:
    for value in ids:
        text = text.replace(value, "<id>")
    return text


@pytest.mark.slow
def test_another_users_ids_answer_as_unknown_and_change_nothing(world: dict[str, Any]) -> None:
    client, tokens, rows = world["client"], world["tokens"], world["rows"]
    cid, qid = a_conversation(client, tokens["ann"])
    store = client.app.state.services.backend().runs()
    client.portal.call(store.allow_always, "ledger__pay", utc_now(), cid)  # A's "always allow" rule
    theirs = {"conversation_id": cid, "conversation": cid, "queued_id": qid, "tool": "ledger__pay"}
    unknown = {
        "conversation_id": str(uuid.uuid4()),
        "conversation": str(uuid.uuid4()),
        "queued_id": str(uuid.uuid4()),
        "tool": "ledger__pay",
    }
    document = client.get("/api/openapi.json", headers=bearer(tokens["bob"])).json()
    before = rows()
    covered = []
    for method, path, op in operations(document):
        if not names_an_id(path, op):
            continue
        as_bob = client.request(**request_for(method, path, op, theirs), headers=bearer(tokens["bob"]))
        as_unknown = client.request(**request_for(method, path, op, unknown), headers=bearer(tokens["bob"]))
        label = f"{method} {path}"
        assert as_bob.status_code == as_unknown.status_code, (label, as_bob.text, as_unknown.text)
        assert masked(as_bob.text, cid, qid) == masked(
            as_unknown.text, unknown["conversation_id"], unknown["conversation"], unknown["queued_id"]
        ), label
        assert as_bob.status_code in (404, 200), (label, as_bob.status_code, as_bob.text)
        if as_bob.status_code == 200:  # the stream's answer for an unknown conversation
            assert "NOT_FOUND" in as_bob.text and SECRET not in as_bob.text, label
        covered.append(label)
        assert rows() == before, f"{label} changed A's data"
    assert len(covered) >= 9, covered  # every conversation route of the document today
    # what B lists, searches and exports holds nothing of A's
    for url in (
        "/api/conversations",
        "/api/conversations?limit=50",
        f"/api/conversations?idPrefix={cid[:4]}",
        f"/api/search?q={SECRET}",
        "/api/export",
        "/api/approvals/always",
    ):
        response = client.get(url, headers=bearer(tokens["bob"]))
        assert response.status_code == 200, (url, response.text)
        assert cid.encode() not in response.content and SECRET.encode() not in response.content, url
        assert b"ledger__pay" not in response.content, url
    # ...while A still sees all of it
    found = client.get(f"/api/search?q={SECRET}", headers=bearer(tokens["ann"])).json()["results"]
    assert found and {r["conversation"] for r in found} == {cid}
    assert cid in client.get("/api/conversations", headers=bearer(tokens["ann"])).text
    assert "ledger__pay" in client.get("/api/approvals/always", headers=bearer(tokens["ann"])).text
    assert rows() == before


def test_with_users_and_no_api_token_a_request_must_name_someone(world: dict[str, Any]) -> None:
    client, tokens = world["client"], world["tokens"]
    assert client.get("/api/conversations").status_code == 401
    assert client.get("/api/conversations", headers=bearer("sophos_" + "x" * 43)).status_code == 401
    assert client.get("/api/conversations", headers=bearer(tokens["bob"])).status_code == 200
    assert client.get("/metrics", headers=bearer(tokens["bob"])).status_code == 403  # admins only
    assert json.loads(client.get("/api/session").text) == {"required": True, "authenticated": False}
