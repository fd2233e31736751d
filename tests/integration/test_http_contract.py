"""The HTTP contract through Starlette's TestClient: every status code and envelope."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from entrypoints.http import api
from tests.support.fake_ollama import FakeOllama
from tests.support.server import event_number

UNKNOWN = "11111111-1111-4111-8111-111111111111"


def disposition(response: Any) -> dict[str, str]:
    """A download's Content-Disposition: `attachment` and its parameters, unquoted."""
    kind, *params = [p.strip() for p in response.headers["content-disposition"].split(";")]
    assert kind == "attachment"
    return {k: v.strip('"') for k, _, v in (p.partition("=") for p in params)}


def events(client: TestClient, cid: str, last_id: str | None = None) -> list[tuple[str | None, str, Any]]:
    headers = {"Last-Event-ID": last_id} if last_id is not None else {}
    out: list[tuple[str | None, str, Any]] = []
    with client.stream("GET", f"/api/chat?conversation={cid}", headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache, no-transform"
        block: dict[str, str] = {}
        for line in response.iter_lines():
            if line == "":
                if block:
                    out.append((block.get("id"), block["event"], json.loads(block["data"])))
                block = {}
                continue
            key, _, value = line.partition(": ")
            block[key] = value
    return out


def start(client: TestClient, body: Any) -> dict[str, Any]:
    response = client.post("/api/chat", json=body)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def finish(client: TestClient, cid: str) -> list[tuple[str | None, str, Any]]:
    return events(client, cid)


def error_of(response: Any) -> tuple[int, str, str]:
    body = response.json()
    return response.status_code, body["error"]["code"], body["error"]["message"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"not json", (400, "BAD_REQUEST", "Request body must be JSON")),
        (b"[1, 2]", (400, "BAD_REQUEST", "Request body must be a JSON object")),
        (b'{"message": "hi", "extra": 1}', (400, "BAD_REQUEST", "Unknown field(s): extra")),
        (b'{"message": "   "}', (400, "BAD_REQUEST", "Message is required")),
        (b'{"message": 5}', (400, "BAD_REQUEST", "Message is required")),
        (b'{"resume": "true", "conversation": "' + UNKNOWN.encode() + b'"}', (400, "BAD_REQUEST", "Message is required")),
        (b'{"resume": true}', (400, "BAD_REQUEST", "A conversation is required to resume")),
        (b'{"message": "hi", "conversation": "../../etc/passwd"}', (400, "BAD_REQUEST", "Invalid Conversation ID")),
        (b'{"message": "hi", "conversation": 12}', (400, "BAD_REQUEST", "Invalid Conversation ID")),
        (b'{"message": "hi", "conversation": "' + UNKNOWN.encode() + b'"}', (404, "NOT_FOUND", "Conversation Not Found")),
        (b'{"message": "' + b"x" * 33_000 + b'"}', (400, "BAD_REQUEST", "Message is longer than 32000 characters")),
        (b'{"message": "' + b"x" * 70_000 + b'"}', (413, "PAYLOAD_TOO_LARGE", "Request body is larger than 65536 bytes")),
        (b'{"message": "hi", "decision": 3}', (400, "BAD_REQUEST", 'decision must be "retry" or "skip"')),
    ],
)
def test_post_chat_refuses_bad_bodies_with_the_envelope(client: TestClient, body: bytes, expected: tuple[int, str, str]) -> None:
    response = client.post("/api/chat", content=body, headers={"Content-Type": "application/json"})
    assert error_of(response) == expected


def test_post_chat_answers_at_once_and_the_stream_ends_with_the_committed_outcome(client: TestClient, ollama: FakeOllama) -> None:
    ollama.add({"text": "Hello there"})
    body = start(client, {"message": "Hi"})
    assert set(body) == {"conversation", "run"}
    stream = finish(client, body["conversation"])
    assert [e[1] for e in stream][-1] == "end"
    assert [event_number(e[0]) for e in stream if e[0]] == list(range(1, len(stream) + 1))
    assert stream[-1][2] == {"conversation": body["conversation"], "status": "completed"}
    assert "".join(e[2] for e in stream if e[1] == "token") == "Hello there"
    detail = client.get(f"/api/conversations/{body['conversation']}").json()
    assert detail["conversation"]["status"] == "completed" and detail["resumable"] is False
    assert [m["role"] for m in detail["messages"]] == ["user", "assistant"]
    assert detail["conversation"]["messageCount"] == 2


def test_a_second_post_while_running_is_409(client: TestClient, ollama: FakeOllama) -> None:
    ollama.add({"text": "slow " * 30, "token_delay": 0.05})
    cid = start(client, {"message": "Hi"})["conversation"]
    assert error_of(client.post("/api/chat", json={"message": "again", "conversation": cid})) == (
        409,
        "SESSION_IN_PROGRESS",
        "Previous request still in progress",
    )
    assert client.get(f"/api/conversations/{cid}").json()["resumable"] is False
    finish(client, cid)


def test_resume_of_a_finished_thread_is_409(client: TestClient) -> None:
    cid = start(client, {"message": "Hi"})["conversation"]
    finish(client, cid)
    assert error_of(client.post("/api/chat", json={"resume": True, "conversation": cid})) == (
        409,
        "RUN_NOT_RESUMABLE",
        "Nothing to resume: the last run finished",
    )


def test_a_failed_run_streams_chat_error_and_a_resume_completes_it(make_client: Any, ollama: FakeOllama) -> None:
    client = make_client(OLLAMA_MODEL="missing")
    cid = start(client, {"message": "Hi"})["conversation"]
    stream = finish(client, cid)
    assert stream[-1][1] == "chat-error" and stream[-1][2]["code"] == "MODEL_UNAVAILABLE"
    assert stream[-1][2]["conversation"] == cid
    later = events(client, cid)  # the durable answer: a single `end` with the failed status
    assert later == [(None, "end", {"conversation": cid, "status": "failed"})]
    summary = client.get("/api/conversations").json()["conversations"][0]
    assert summary["status"] == "failed" and summary["error"]["code"] == "MODEL_UNAVAILABLE"
    assert client.get(f"/api/conversations/{cid}").json()["resumable"] is True


def test_the_stream_answers_bad_and_unknown_ids_with_one_event(client: TestClient) -> None:
    assert events(client, "not-a-uuid") == [(None, "chat-error", {"code": "BAD_REQUEST", "message": "Invalid Conversation ID"})]
    assert events(client, UNKNOWN) == [
        (None, "chat-error", {"code": "NOT_FOUND", "message": "Conversation Not Found", "conversation": UNKNOWN})
    ]


def test_replay_after_last_event_id_sends_only_later_events(client: TestClient, ollama: FakeOllama) -> None:
    ollama.add({"text": "a b c d e f g h", "token_delay": 0.05})
    cid = start(client, {"message": "Hi"})["conversation"]
    time.sleep(0.2)
    replay = events(client, cid, last_id="3")
    assert event_number(replay[0][0]) == 4 and replay[-1][1] == "end"
    for bad in ("garbage", "-5"):
        assert events(client, UNKNOWN, last_id=bad)[0][1] == "chat-error"


def test_list_detail_and_exports(client: TestClient, ollama: FakeOllama) -> None:
    ollama.add({"text": "first"}, {"text": "second"})
    first_run = start(client, {"message": "Alpha"})
    a = first_run["conversation"]
    finish(client, a)
    b = start(client, {"message": "Beta"})["conversation"]
    finish(client, b)
    listed = client.get("/api/conversations").json()["conversations"]
    assert [c["id"] for c in listed[:2]] == [b, a]
    assert set(listed[0]) == {"id", "title", "createdAt", "updatedAt", "messageCount", "status"}
    assert listed[0]["createdAt"].endswith("Z") and len(listed[0]["createdAt"]) == 24

    md = client.get(f"/api/conversations/{a}/export")
    assert md.headers["content-type"] == "text/markdown; charset=utf-8"
    # the contract's `filename` as it is; `filename*`, which browsers take, names the file
    # from its title and date (docs/contract-extensions.md)
    assert disposition(md)["filename"] == f"{a}.md"
    assert md.text.startswith("# Alpha\n\n- Conversation / thread_id: `" + a + "`")
    assert "\n## User\n\nAlpha\n\n## Assistant\n\nfirst\n" in md.text  # 6.1: the headings as they are

    jl = client.get(f"/api/conversations/{a}/export?format=jsonl")
    assert jl.headers["content-type"] == "application/x-ndjson; charset=utf-8"
    assert disposition(jl)["filename"] == f"{a}.checkpoints.jsonl"
    # named from the title and date everywhere, as `sophos export -o` names the file (issue 48 item 4)
    day = listed[1]["createdAt"][:10]
    assert disposition(md)["filename*"] == f"UTF-8''alpha-{day}.md"
    assert disposition(jl)["filename*"] == f"UTF-8''alpha-{day}.checkpoints.jsonl"
    assert disposition(client.get(f"/api/conversations/{a}/export?format=json"))["filename"] == f"alpha-{day}.json"
    lines = [json.loads(x) for x in jl.text.strip().split("\n")]
    assert lines[0]["step"] == -1 and lines[0]["source"] == "input"
    assert lines[-1]["next"] == [] and lines[-1]["message_count"] == 2
    assert lines[-1]["last_message"]["content"] == "first"
    assert {line["run_id"] for line in lines} == {first_run["run"]}  # checkpoints know their run

    for path in (f"/api/conversations/{UNKNOWN}", f"/api/conversations/{UNKNOWN}/export"):
        assert error_of(client.get(path)) == (404, "NOT_FOUND", "Conversation Not Found")
    for path in ("/api/conversations/not-a-uuid", "/api/conversations/..%2F..%2Fetc%2Fpasswd/export"):
        assert error_of(client.get(path))[:2] in {(400, "BAD_REQUEST"), (404, "NOT_FOUND")}
    assert error_of(client.get("/api/conversations/not-a-uuid")) == (400, "BAD_REQUEST", "Invalid Conversation ID")


def test_paging_returns_pages_and_a_cursor(client: TestClient) -> None:
    ids = []
    for i in range(5):
        cid = start(client, {"message": f"c{i}"})["conversation"]
        finish(client, cid)
        ids.append(cid)
    first = client.get("/api/conversations?limit=2").json()
    assert [c["id"] for c in first["conversations"]] == ids[::-1][:2]
    second = client.get("/api/conversations", params={"limit": 2, "before": first["nextCursor"]}).json()
    assert [c["id"] for c in second["conversations"]] == ids[::-1][2:4]
    for bad in ("limit=0", "limit=abc", "limit=501", "before=zzz", "sort=asc"):
        assert client.get(f"/api/conversations?{bad}").status_code == 400


def test_q_searches_titles_over_all_conversations_not_only_a_page(client: TestClient) -> None:
    ids = []
    for text in ("Plan the Köln trip", "groceries", "more groceries", "KÖLN hotels"):
        cid = start(client, {"message": text})["conversation"]
        finish(client, cid)
        ids.append(cid)
    found = client.get("/api/conversations", params={"q": " köln "}).json()
    assert [c["id"] for c in found["conversations"]] == [ids[3], ids[0]]
    paged = client.get("/api/conversations", params={"q": "köln", "limit": 1}).json()
    assert [c["id"] for c in paged["conversations"]] == [ids[3]]
    rest = client.get("/api/conversations", params={"q": "köln", "limit": 1, "before": paged["nextCursor"]}).json()
    assert [c["id"] for c in rest["conversations"]] == [ids[0]] and rest["nextCursor"] is None
    assert client.get("/api/conversations", params={"q": ""}).json()["conversations"][0]["id"] == ids[3]
    assert error_of(client.get("/api/conversations", params={"q": "x" * 201}))[:2] == (400, "BAD_REQUEST")


def test_rename_and_delete(client: TestClient, tmp_path: Path) -> None:
    cid = start(client, {"message": "old title"})["conversation"]
    finish(client, cid)
    renamed = client.patch(f"/api/conversations/{cid}", json={"title": "  New   title "})
    assert renamed.status_code == 200 and renamed.json()["conversation"]["title"] == "New title"
    for bad in ({"title": ""}, {"title": 3}, {}, {"title": "x" * 201}, {"title": "ok", "x": 1}):
        assert client.patch(f"/api/conversations/{cid}", json=bad).status_code == 400
    db = sqlite3.connect(tmp_path / "db" / "sophos.db")
    assert db.execute("SELECT count(*) FROM checkpoints WHERE thread_id = ?", (cid,)).fetchone()[0] > 0
    assert client.delete(f"/api/conversations/{cid}").status_code == 204
    for table in ("checkpoints", "writes"):
        assert db.execute(f"SELECT count(*) FROM {table} WHERE thread_id = ?", (cid,)).fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM runs WHERE conversation_id = ?", (cid,)).fetchone()[0] == 0
    assert error_of(client.delete(f"/api/conversations/{cid}"))[:2] == (404, "NOT_FOUND")


def test_delete_of_a_running_conversation_is_409(client: TestClient, ollama: FakeOllama) -> None:
    ollama.add({"text": "slow " * 30, "token_delay": 0.05})
    cid = start(client, {"message": "Hi"})["conversation"]
    assert error_of(client.delete(f"/api/conversations/{cid}"))[:2] == (409, "SESSION_IN_PROGRESS")
    finish(client, cid)


def test_cancel_stops_the_run_and_ends_the_stream_with_cancelled(client: TestClient, ollama: FakeOllama) -> None:
    ollama.add({"text": "word " * 200, "token_delay": 0.02})
    cid = start(client, {"message": "Hi"})["conversation"]
    time.sleep(0.2)
    response = client.post("/api/chat/cancel", json={"conversation": cid})
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert events(client, cid) == [(None, "end", {"conversation": cid, "status": "cancelled"})]
    assert client.get(f"/api/conversations/{cid}").json()["resumable"] is True
    assert error_of(client.post("/api/chat/cancel", json={"conversation": cid}))[:2] == (409, "NO_ACTIVE_RUN")
    assert error_of(client.post("/api/chat/cancel", json={"conversation": "nope"}))[:2] == (400, "BAD_REQUEST")


def test_health_and_readiness(make_client: Any, ollama: FakeOllama) -> None:
    client = make_client()
    assert client.get("/api/healthz").json() == {"status": "ok"}
    assert client.get("/api/readyz").json()["status"] == "ok"
    missing = make_client(OLLAMA_MODEL="llama").get("/api/readyz")
    assert missing.status_code == 503 and missing.json()["message"] == 'Ollama model "llama" not available'
    down = make_client(OLLAMA_HOST="http://127.0.0.1:9").get("/api/readyz")
    assert down.status_code == 503 and down.json()["message"] == "Failed to connect to Ollama"
    assert "`ollama serve`" in down.json()["fix"]


def test_a_token_guards_every_api_route_but_healthz(make_client: Any) -> None:
    client = make_client(API_TOKEN="s3cret")
    assert client.get("/api/healthz").status_code == 200
    assert error_of(client.get("/api/conversations"))[:2] == (401, "UNAUTHORIZED")
    assert client.get("/api/conversations", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/api/conversations", headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_cross_origin_writes_are_refused(client: TestClient) -> None:
    response = client.post("/api/chat", json={"message": "hi"}, headers={"Origin": "http://evil.example"})
    assert error_of(response)[:2] == (403, "FORBIDDEN")
    same = client.post("/api/chat", json={"message": "hi"}, headers={"Origin": "http://testserver"})
    assert same.status_code == 200
    finish(client, same.json()["conversation"])


def test_unknown_routes_and_methods_use_the_envelope(client: TestClient) -> None:
    assert error_of(client.get("/api/nope"))[:2] == (404, "NOT_FOUND")
    assert error_of(client.put("/api/chat"))[:2] == (405, "METHOD_NOT_ALLOWED")


def test_the_openapi_document_lists_exactly_the_real_routes(client: TestClient) -> None:
    doc = client.get("/api/openapi.json").json()
    documented = {(path, method.upper()) for path, ops in doc["paths"].items() for method in ops}
    real = {
        (re.sub(r":\w+}", "}", route.path), method)  # OpenAPI's template has no converter ({tool:path})
        for route in client.app.routes  # type: ignore[attr-defined]
        if route.path.startswith("/api")
        for method in (route.methods or set()) - {"HEAD"}
    }
    assert documented == real


def test_every_api_route_is_served_by_the_handler_its_declaration_names(client: TestClient) -> None:
    # app.py mounts the table the document is written from (entrypoints/http/api.py)
    mounted = {
        (route.path, method): route.endpoint
        for route in client.app.routes  # type: ignore[attr-defined]
        if isinstance(route, Route) and route.path.startswith("/api")
        for method in (route.methods or set()) - {"HEAD"}
    }
    assert mounted == {(r.path, r.method): r.endpoint for r in api.ROUTES}


def test_the_context_field_matches_its_documented_schema(client: TestClient) -> None:
    doc = client.get("/api/openapi.json").json()
    schema = doc["components"]["schemas"]["Context"]
    ok = doc["paths"]["/api/conversations/{conversation_id}"]["get"]["responses"]["200"]
    assert ok["content"]["application/json"]["schema"]["properties"]["context"] == {"$ref": "#/components/schemas/Context"}
    cid = start(client, {"message": "hi"})["conversation"]
    finish(client, cid)
    context = client.get(f"/api/conversations/{cid}").json()["context"]
    assert set(context) == set(schema["required"]) and set(schema["properties"]) == {*schema["required"], "searched"}
    assert context["sentFrom"] == 0 and 0 < context["tokens"] <= context["budget"]
    assert all(isinstance(v, int) for v in context.values())  # `searched` only when a file was searched
