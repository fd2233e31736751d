"""AUTH=proxy: a user header is believed from a trusted proxy's address only (the socket's
peer); from anyone else it is ignored and logged, and the request needs a token as usual."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from entrypoints.container import create_container
from entrypoints.http.app import create_app
from entrypoints.lgapi.app import create_lgapi_app
from entrypoints.settings import SettingsError, load_settings
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama

PROXY = "10.1.2.3"


@pytest.fixture
def clients(tmp_path: Path, ollama: FakeOllama) -> Iterator[Any]:
    opened: list[TestClient] = []

    def make(peer: str, **settings: str) -> TestClient:
        env = app_env(tmp_path, ollama.url, TOOLS_BACKEND="none", AUTH="proxy", TRUSTED_PROXY_IPS="10.1.2.0/24",
                      PROXY_USER_HEADER="X-Forwarded-User", **settings)
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


def test_a_spoofed_header_from_another_address_is_ignored_and_logged(
    clients: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "services.sessions")
    direct = clients("203.0.113.9")
    answer = direct.get("/api/conversations", headers={"X-Forwarded-User": "ann@example.com",
                                                       "X-Forwarded-For": PROXY})
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
    env = app_env(tmp_path, ollama.url, TOOLS_BACKEND="none", AUTH="proxy", TRUSTED_PROXY_IPS="10.1.2.0/24",
                  PROXY_USER_HEADER="X-Forwarded-User")
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
