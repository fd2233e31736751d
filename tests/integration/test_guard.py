"""The request guard: DNS rebinding (unknown Host names) and cross-origin writes are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from entrypoints.container import close_container, create_container
from entrypoints.http.app import create_app
from tests.integration.test_http_contract import error_of, finish
from tests.support.app import app_env

UNKNOWN = "11111111-1111-4111-8111-111111111111"
EVIL = {"Host": "evil.example:8000", "Origin": "http://evil.example:8000"}


def refused_for_host(response: Any) -> bool:
    status, code, message = error_of(response)
    return (status, code) == (400, "HOST_NOT_ALLOWED") and "ALLOWED_HOSTS" in message


def test_a_rebound_host_name_is_refused_on_every_route_and_nothing_is_touched(make_client: Any) -> None:
    client: TestClient = make_client(ALLOWED_HOSTS="")  # the default: no extra names
    loopback = {"Host": "127.0.0.1:8000"}
    started = client.post("/api/chat", json={"message": "hi"}, headers=loopback)
    assert started.status_code == 200, started.text
    cid = started.json()["conversation"]
    client.headers.update(loopback)
    finish(client, cid)
    client.headers.pop("Host")

    for method, path in [
        ("GET", "/"),
        ("GET", "/api/healthz"),
        ("GET", "/api/readyz"),
        ("GET", "/metrics"),
        ("GET", "/api/conversations"),
        ("GET", f"/api/conversations/{cid}"),
        ("GET", f"/api/conversations/{cid}/export?format=jsonl"),
        ("GET", f"/api/chat?conversation={cid}"),
        ("PATCH", f"/api/conversations/{cid}"),
        ("DELETE", f"/api/conversations/{cid}"),
        ("POST", "/api/chat"),
    ]:
        body = {"title": "pwned"} if method == "PATCH" else {"message": "hi"} if method == "POST" else None
        response = client.request(method, path, json=body, headers=EVIL)
        assert refused_for_host(response), (method, path, response.status_code, response.text[:200])

    kept = client.get(f"/api/conversations/{cid}", headers=loopback).json()
    assert kept["conversation"]["title"] != "pwned" and len(kept["messages"]) == 2


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "localhost:8000",
        "LocalHost.",
        "127.0.0.1",
        "127.0.0.1:8000",
        "127.8.9.10:1",
        "[::1]",
        "[::1]:8000",
        "192.168.1.20:8000",
        "[fe80::1]",
        "10.0.0.1",
        "box.lan:8000",  # the configured HOST
        "sophos.internal",
        "SOPHOS.INTERNAL.:99",
        "example.com",
        "api.example.com",
        "a.b.example.com:8443",
    ],
)
def test_loopback_ip_literal_and_configured_hosts_are_served(make_client: Any, host: str) -> None:
    client = make_client(HOST="box.lan", ALLOWED_HOSTS=" sophos.internal , .example.com:8443,")
    response = client.get("/api/healthz", headers={"Host": host})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:8000",
        "localhost.evil.example",
        "app.localhost",
        "notexample.com",
        "example.com.evil.example",
        "sophos.internal.evil.example",
        "box.lan.evil.example",
        "user@127.0.0.1",
        "127.0.0.1:99999",
        "127.0.0.1:x",
        "[::1",
        "[evil]:80",
        "",
        "a b",
    ],
)
def test_any_other_host_is_refused(make_client: Any, host: str) -> None:
    client = make_client(HOST="box.lan", ALLOWED_HOSTS="sophos.internal,.example.com")
    assert refused_for_host(client.get("/api/healthz", headers={"Host": host}))


@pytest.mark.parametrize(
    ("host", "origin", "allowed"),
    [
        ("127.0.0.1:8000", "http://127.0.0.1:8000", True),
        ("127.0.0.1", "http://127.0.0.1:80", True),  # default ports are the same origin
        ("LOCALHOST:8000", "http://localhost:8000", True),
        ("[::1]:8000", "http://[0:0::1]:8000", True),
        ("127.0.0.1:8000", "https://127.0.0.1:8000", False),  # another scheme
        ("127.0.0.1:8000", "http://127.0.0.1:8001", False),  # another port
        ("127.0.0.1:8000", "http://localhost:8000", False),  # another host
        ("127.0.0.1", "https://127.0.0.1:80", False),
        ("127.0.0.1:8000", "null", False),  # a sandboxed frame or a file: page
        ("127.0.0.1:8000", "127.0.0.1:8000", False),
    ],
)
def test_a_write_is_served_only_from_the_same_scheme_host_and_port(
    make_client: Any, host: str, origin: str, allowed: bool
) -> None:
    client = make_client(ALLOWED_HOSTS="")
    headers = {"Host": host, "Origin": origin}
    for response in (
        client.patch(f"/api/conversations/{UNKNOWN}", json={"title": "x"}, headers=headers),
        client.delete(f"/api/conversations/{UNKNOWN}", headers=headers),
    ):
        expected = (404, "NOT_FOUND") if allowed else (403, "FORBIDDEN")
        assert error_of(response)[:2] == expected


async def asgi_get(app: Any, path: str, headers: list[tuple[bytes, bytes]]) -> tuple[int, bytes]:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.0",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


async def test_a_request_without_exactly_one_host_header_is_refused(tmp_path: Path) -> None:
    container = create_container(app_env(tmp_path, TOOLS_BACKEND="none"))
    app = create_app(container, manage_lifecycle=False)
    try:
        assert (await asgi_get(app, "/api/healthz", [(b"host", b"127.0.0.1")]))[0] == 200
        for headers in ([], [(b"host", b"127.0.0.1"), (b"host", b"evil.example")]):
            status, body = await asgi_get(app, "/api/conversations", headers)
            assert status == 400 and b"HOST_NOT_ALLOWED" in body
    finally:
        await close_container(container)
