"""Hostile inputs end in a clear 400, never a 500; responses carry safe headers."""

from __future__ import annotations

import base64
import logging
import uuid
from typing import Any

import pytest
from starlette.testclient import TestClient

from domain.errors import InvalidInput
from services.listing import decode_cursor
from tests.support.fake_ollama import FakeOllama


def error_of(response: Any) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


def post_raw(client: TestClient, path: str, body: bytes, method: str = "POST") -> Any:
    return client.request(method, path, content=body, headers={"Content-Type": "application/json"})


def test_a_lone_surrogate_in_a_message_is_400_and_leaves_no_conversation(client: TestClient) -> None:
    response = post_raw(client, "/api/chat", b'{"message": "hi \\ud800 there"}')
    assert error_of(response) == (400, "BAD_REQUEST")
    assert "Unicode" in response.json()["error"]["message"]
    assert client.get("/api/conversations").json()["conversations"] == []


def test_a_lone_surrogate_in_a_title_or_a_field_name_is_400(client: TestClient, ollama: FakeOllama) -> None:
    cid = client.post("/api/chat", json={"message": "hi"}).json()["conversation"]
    assert error_of(post_raw(client, f"/api/conversations/{cid}", b'{"title": "\\udfff"}', "PATCH")) == (400, "BAD_REQUEST")
    assert error_of(post_raw(client, "/api/chat", b'{"\\ud800": 1}')) == (400, "BAD_REQUEST")


def test_json_nested_a_thousand_deep_is_400(client: TestClient) -> None:
    body = b'{"message": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"
    assert error_of(post_raw(client, "/api/chat", body)) == (400, "BAD_REQUEST")
    deep = b"[" * 1000 + b"]" * 1000
    assert error_of(post_raw(client, "/api/chat/cancel", deep)) == (400, "BAD_REQUEST")


def test_a_conversation_id_with_a_trailing_newline_is_400(client: TestClient) -> None:
    cid = str(uuid.uuid4())
    for path in (f"/api/conversations/{cid}%0A", f"/api/conversations/{cid}%0A/export"):
        assert error_of(client.get(path)) == (400, "BAD_REQUEST"), path
    assert error_of(client.post("/api/chat", json={"message": "x", "conversation": cid + "\n"})) == (400, "BAD_REQUEST")


# a fixed id: test ids must be the same in every xdist worker's collection
ANY_ID = "6c1f0e52-3a9d-4b7e-8f21-94d3c0a5b7e8"


@pytest.mark.parametrize(
    "cursor",
    [
        f"0001-01-01T00:00:00+01:00~{ANY_ID}",  # the old format is no longer accepted
        base64.urlsafe_b64encode(f"0001-01-01T00:00:00+01:00~{ANY_ID}".encode()).decode().rstrip("="),
        base64.urlsafe_b64encode(f"2026-01-01T00:00:00~{ANY_ID}".encode()).decode().rstrip("="),
        "not a cursor",
        "////",
        "é",
    ],
)
def test_a_bad_paging_cursor_is_400(client: TestClient, cursor: str) -> None:
    assert error_of(client.get("/api/conversations", params={"limit": 1, "before": cursor})) == (400, "BAD_REQUEST")


def test_the_paging_cursor_is_opaque_url_safe_and_pages_through(client: TestClient, ollama: FakeOllama) -> None:
    ids = {client.post("/api/chat", json={"message": f"m{i}"}).json()["conversation"] for i in range(3)}
    seen: list[str] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 1, **({"before": cursor} if cursor else {})}
        page = client.get("/api/conversations", params=params).json()
        seen += [c["id"] for c in page["conversations"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
        assert all(ch.isalnum() or ch in "-_" for ch in cursor), cursor
    assert set(seen) == ids and len(seen) == 3


def test_decode_cursor_refuses_a_date_that_overflows_in_utc() -> None:
    raw = base64.urlsafe_b64encode(f"0001-01-01T00:00:00+01:00~{uuid.uuid4()}".encode()).decode()
    with pytest.raises(InvalidInput):
        decode_cursor(raw.rstrip("="))


def test_titles_lose_bidi_and_zero_width_controls(client: TestClient, ollama: FakeOllama) -> None:
    cid = client.post("/api/chat", json={"message": "invoice\u202egnp.exe\u200b"}).json()["conversation"]
    assert client.get(f"/api/conversations/{cid}").json()["conversation"]["title"] == "invoicegnp.exe"
    renamed = client.patch(f"/api/conversations/{cid}", json={"title": "a\u2066b\u200dc\ufeff"}).json()
    assert renamed["conversation"]["title"] == "abc"
    assert error_of(client.patch(f"/api/conversations/{cid}", json={"title": "\u202e\u200b"})) == (400, "BAD_REQUEST")


def test_api_and_export_responses_are_nosniff_and_not_stored(client: TestClient, ollama: FakeOllama) -> None:
    cid = client.post("/api/chat", json={"message": "hi"}).json()["conversation"]
    for path in (
        "/api/conversations",
        f"/api/conversations/{cid}",
        f"/api/conversations/{cid}/export",
        f"/api/conversations/{cid}/export?format=jsonl",
        "/api/conversations/nope",
    ):
        response = client.get(path)
        assert response.headers["x-content-type-options"] == "nosniff", path
        assert response.headers["cache-control"] == "no-store", path
    with client.stream("GET", f"/api/chat?conversation={cid}") as stream:
        assert stream.headers["x-content-type-options"] == "nosniff"
        assert stream.headers["cache-control"] == "no-cache, no-transform"  # the contract's
    assert client.get("/").headers["x-content-type-options"] == "nosniff"


def test_an_unexpected_failure_is_a_500_envelope_logged_once(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    services = client.app.state.services  # type: ignore[attr-defined]

    async def broken() -> Any:
        raise ZeroDivisionError("secret detail")

    monkeypatch.setattr(services.model(), "check", broken)
    with caplog.at_level(logging.ERROR):
        response = client.get("/api/readyz")
    assert error_of(response) == (500, "UNKNOWN_ERROR")
    assert "secret" not in response.text
    assert response.headers["x-content-type-options"] == "nosniff"
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(logged) == 1 and logged[0].exc_info is not None
