"""AUTH=proxy: a user header is believed from a trusted proxy's address only (the socket's
peer); from anyone else it is ignored and logged, and the request needs a token as usual."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from domain.principals import BOOTSTRAP_ADMIN
from entrypoints.container import create_container
from entrypoints.http.app import create_app
from entrypoints.lgapi.app import create_lgapi_app
from entrypoints.settings import SettingsError, load_settings
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama
from tests.support.server import LiveServer, sse_events
from tests.support.tls_proxy import tls_proxy

PROXY = "10.1.2.3"


@pytest.fixture
def clients(tmp_path: Path, ollama: FakeOllama) -> Iterator[Any]:
    opened: list[TestClient] = []

    def make(peer: str, **settings: str) -> TestClient:
        env = app_env(
            tmp_path,
            ollama.url,
            **{
                "TOOLS_BACKEND": "none",
                "AUTH": "proxy",
                "TRUSTED_PROXY_IPS": "10.1.2.0/24",
                "PROXY_USER_HEADER": "X-Forwarded-User",
                **settings,
            },
        )
        client = TestClient(create_app(create_container(env)), client=(peer, 40000))
        client.__enter__()
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.__exit__(None, None, None)


def test_the_trusted_proxys_header_logs_in_and_creates_the_user(clients: Any) -> None:
    proxy = clients(PROXY)
    started = proxy.post("/api/chat", json={"message": "hi"}, headers={"X-Forwarded-User": "ann@example.com"})
    assert started.status_code == 200, started.text
    cid = started.json()["conversation"]
    assert proxy.get(f"/api/conversations/{cid}", headers={"X-Forwarded-User": "ann@example.com"}).status_code == 200
    # another user through the same proxy does not reach it
    assert proxy.get(f"/api/conversations/{cid}", headers={"X-Forwarded-User": "bob@example.com"}).status_code == 404
    users = proxy.portal.call(proxy.app.state.services.users().list)  # type: ignore[attr-defined,union-attr]
    assert sorted(u.name for u, _ in users) == ["ann@example.com", "bob@example.com"]
    audit = proxy.app.state.services.audit()  # type: ignore[attr-defined]
    rows = proxy.portal.call(partial(audit.entries, by=BOOTSTRAP_ADMIN))  # type: ignore[union-attr]
    assert [(e.actor, e.action, e.target, e.origin) for e in rows] == [
        ("proxy", "user.added", name, PROXY) for name in ("ann@example.com", "bob@example.com")
    ]


def test_a_spoofed_header_from_another_address_is_ignored_and_logged(clients: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "services.sessions")
    direct = clients("203.0.113.9")
    answer = direct.get("/api/conversations", headers={"X-Forwarded-User": "ann@example.com", "X-Forwarded-For": PROXY})
    assert answer.status_code == 401
    assert any("ignored the x-forwarded-user header from 203.0.113.9" in r.getMessage() for r in caplog.records)
    users = direct.portal.call(direct.app.state.services.users().list)  # type: ignore[attr-defined,union-attr]
    assert users == []  # nobody was created


def test_without_auto_create_an_unknown_user_is_refused(clients: Any) -> None:
    proxy = clients(PROXY, PROXY_AUTO_CREATE="false")
    assert proxy.get("/api/conversations", headers={"X-Forwarded-User": "eve"}).status_code == 401


def test_proxy_mode_needs_trusted_addresses() -> None:
    with pytest.raises(SettingsError, match="TRUSTED_PROXY_IPS"):
        load_settings({"AUTH": "proxy", "CONFIG_DIR": "/nonexistent"})
    with pytest.raises(SettingsError, match="not an address"):
        load_settings({"AUTH": "proxy", "TRUSTED_PROXY_IPS": "proxy.example", "CONFIG_DIR": "/nonexistent"})


def test_the_langgraph_api_believes_the_header_from_the_proxy_only(tmp_path: Path, ollama: FakeOllama) -> None:
    env = app_env(
        tmp_path,
        ollama.url,
        TOOLS_BACKEND="none",
        AUTH="proxy",
        TRUSTED_PROXY_IPS="10.1.2.0/24",
        PROXY_USER_HEADER="X-Forwarded-User",
    )
    container = create_container(env)
    app = create_lgapi_app(container.services(), container.settings(), asyncio.Event())
    ann = {"X-Forwarded-User": "ann@example.com"}
    with TestClient(app, client=(PROXY, 40000)) as proxy, TestClient(app, client=("203.0.113.9", 40000)) as direct:
        made = proxy.post("/threads", json={}, headers=ann)
        assert made.status_code == 200, made.text
        tid = made.json()["thread_id"]
        assert proxy.get(f"/threads/{tid}", headers=ann).status_code == 200
        assert proxy.get(f"/threads/{tid}", headers={"X-Forwarded-User": "bob@example.com"}).status_code == 404
        spoofed = direct.get(f"/threads/{tid}", headers={**ann, "X-Forwarded-For": PROXY})
        assert spoofed.status_code == 401


def test_a_user_header_sent_twice_is_refused_on_both_apis(tmp_path: Path, clients: Any, ollama: FakeOllama) -> None:
    """A proxy that adds its header after the one the client wrote: the first is the client's."""
    twice = [("X-Forwarded-User", "mallory"), ("X-Forwarded-User", "ann@example.com")]
    proxy = clients(PROXY)
    refused = proxy.get("/api/conversations", headers=twice)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "BAD_REQUEST"
    assert "x-forwarded-user header was sent 2 times" in refused.json()["error"]["message"]
    assert proxy.post("/api/chat", json={"message": "hi"}, headers=twice).status_code == 400
    env = app_env(
        tmp_path,
        ollama.url,
        TOOLS_BACKEND="none",
        AUTH="proxy",
        TRUSTED_PROXY_IPS="10.1.2.0/24",
        PROXY_USER_HEADER="X-Forwarded-User",
    )
    container = create_container(env)
    with TestClient(create_lgapi_app(container.services(), container.settings(), asyncio.Event()), client=(PROXY, 40000)) as lg:
        assert lg.post("/threads", json={}, headers=twice).status_code == 400
    users = proxy.portal.call(proxy.app.state.services.users().list)  # type: ignore[attr-defined,union-attr]
    assert users == []  # neither name was believed


@pytest.mark.parametrize("auth", ["token", "proxy"])
def test_x_forwarded_proto_and_for_are_believed_from_the_trusted_proxies_only(clients: Any, auth: str) -> None:
    """The page is https at the proxy: its writes carry `Origin: https://…`, which matches the
    request only once the proxy's `X-Forwarded-Proto` is believed; a client elsewhere that
    writes the header itself is not. The failed-login limit counts the client the proxy
    names, never the proxy (nor an address a client wrote)."""
    page = {
        "Origin": "https://testserver",
        "X-Forwarded-Proto": "https",
        "X-Forwarded-User": "ann",
        "X-Forwarded-For": "198.51.100.7",
    }
    proxy, direct = clients(PROXY, AUTH=auth, API_TOKEN="s3cret"), clients("203.0.113.9", AUTH=auth, API_TOKEN="s3cret")
    as_user = {} if auth == "proxy" else {"Authorization": "Bearer s3cret"}
    through = proxy.post("/api/chat", json={"message": "hi"}, headers={**page, **as_user})
    assert through.status_code == 200, through.text
    forged = direct.post("/api/chat", json={"message": "hi"}, headers={**page, "Authorization": "Bearer s3cret"})
    assert forged.status_code == 403 and forged.json()["error"]["code"] == "FORBIDDEN"

    def guess(client: TestClient, named: str) -> int:
        return int(
            client.get("/api/conversations", headers={"Authorization": "Bearer wrong", "X-Forwarded-For": named}).status_code
        )

    assert [guess(proxy, "198.51.100.8") for _ in range(11)] == [401] * 10 + [429]
    assert guess(proxy, "198.51.100.9") == 401  # another client behind the same proxy
    assert [guess(direct, f"198.51.100.{n}") for n in range(20, 31)] == [401] * 10 + [429]  # the peer's own count


def test_sso_behind_a_tls_proxy_works_end_to_end_from_the_https_page(tmp_path: Path, ollama: FakeOllama) -> None:
    """The documented set-up: a proxy terminates TLS, authenticates the user and sends
    `Remote-User`, `X-Forwarded-For` and `X-Forwarded-Proto: https` to a `sophos serve` on
    127.0.0.1. The page's writes (`Origin: https://…`) were all refused before (issue 42)."""
    env = app_env(tmp_path, ollama.url, TOOLS_BACKEND="none", AUTH="proxy", TRUSTED_PROXY_IPS="127.0.0.1", API_TOKEN="s3cret")
    server = LiveServer(env, tmp_path).start()
    try:
        with (
            tls_proxy(server.port, tmp_path, "Remote-User", "ann@example.com") as proxy,
            httpx.Client(base_url=proxy.url, verify=str(proxy.ca), timeout=30) as page,
        ):
            browser = {"Origin": proxy.url, "Sec-Fetch-Site": "same-origin", "Remote-User": "mallory"}
            assert page.get("/api/session").json() == {
                "required": True,
                "authenticated": True,
                "user": {"name": "ann@example.com", "role": "user"},
            }
            started = page.post("/api/chat", json={"message": "hi"}, headers=browser)
            assert started.status_code == 200, started.text
            cid = started.json()["conversation"]
            with page.stream("GET", "/api/chat", params={"conversation": cid}) as events:
                assert [e for _, e, _ in sse_events(events)][-1] == "end"
            renamed = page.patch(f"/api/conversations/{cid}", json={"title": "via TLS"}, headers=browser)
            assert renamed.status_code == 200, renamed.text
            listed = page.get("/api/conversations").json()["conversations"]
            assert [(c["id"], c["title"]) for c in listed] == [(cid, "via TLS")]  # ann's, not mallory's

            # the failed-login limit counts the client the proxy names, not the proxy
            def guess(named: str) -> int:
                return page.post(
                    "/api/session", json={"token": "wrong"}, headers={**browser, "X-Forwarded-For": named}
                ).status_code

            assert [guess("198.51.100.8") for _ in range(11)] == [401] * 10 + [429]
            assert guess("198.51.100.9") == 401
            assert page.delete(f"/api/conversations/{cid}", headers=browser).status_code == 204
        # straight to Sophos, the same headers mean nothing: a client writing them is not the proxy
        direct = server.post(
            "/api/chat",
            {"message": "hi"},
            headers={"Origin": proxy.url, "X-Forwarded-Proto": "https", "Authorization": "Bearer s3cret"},
        )
        assert direct.status_code == 403 and direct.json()["error"]["code"] == "FORBIDDEN"
    finally:
        server.stop()


def test_a_proxy_is_known_by_its_address_on_a_dual_stack_socket_too(clients: Any) -> None:
    """An IPv4 proxy reaching a server that listens on `::` is the peer `::ffff:10.1.2.3`."""
    mapped = clients("::ffff:10.1.2.3")
    made = mapped.post(
        "/api/chat",
        json={"message": "hi"},
        headers={"X-Forwarded-User": "ann", "Origin": "https://testserver", "X-Forwarded-Proto": "https"},
    )
    assert made.status_code == 200, made.text
