"""The LangGraph API's guard, in process: the host allow-list, API_TOKEN as `X-Api-Key` or
a bearer, and CORS only for the origins LANGGRAPH_API_CORS_ORIGINS names."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from entrypoints.container import close_container, create_container
from entrypoints.lgapi.app import create_lgapi_app
from tests.support.app import app_env

UI = "http://ui.example:3000"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    env = app_env(tmp_path, TOOLS_BACKEND="none", API_TOKEN="s3cret-token", LANGGRAPH_API_CORS_ORIGINS=f"{UI}, http://other.example")
    container = create_container(env)
    app = create_lgapi_app(container.services(), container.settings(), asyncio.Event())
    with TestClient(app) as c:
        yield c
        c.portal.call(close_container, container)  # type: ignore[union-attr]


def test_the_token_is_taken_as_x_api_key_or_bearer_and_required_but_for_ok(client: TestClient) -> None:
    assert client.get("/ok").status_code == 200
    refused = client.get("/info")
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "UNAUTHORIZED"
    assert client.get("/info", headers={"X-Api-Key": "wrong"}).status_code == 401
    assert client.get("/info", headers={"X-Api-Key": "s3cret-token"}).status_code == 200
    assert client.get("/info", headers={"Authorization": "Bearer s3cret-token"}).status_code == 200
    made = client.post("/threads", json={}, headers={"X-Api-Key": "s3cret-token"})
    assert made.status_code == 200 and made.json()["status"] == "idle"


def test_an_unknown_host_name_is_refused(client: TestClient) -> None:
    r = client.get("/ok", headers={"Host": "rebound.attacker.example"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "HOST_NOT_ALLOWED"


def test_cors_answers_the_allowed_origins_only(client: TestClient) -> None:
    key = {"X-Api-Key": "s3cret-token"}
    pre = client.options("/threads", headers={"Origin": UI, "Access-Control-Request-Method": "POST"})
    assert pre.status_code == 204 and pre.headers["access-control-allow-origin"] == UI
    assert "X-Api-Key" in pre.headers["access-control-allow-headers"]
    made = client.post("/threads", json={}, headers={**key, "Origin": UI})
    assert made.status_code == 200 and made.headers["access-control-allow-origin"] == UI
    assert "Content-Location" in made.headers["access-control-expose-headers"]
    evil = "http://evil.example"
    assert client.options("/threads", headers={"Origin": evil, "Access-Control-Request-Method": "POST"}).status_code == 403
    refused = client.post("/threads", json={}, headers={**key, "Origin": evil})
    assert refused.status_code == 403 and "access-control-allow-origin" not in refused.headers
    sneaky = client.post("/threads", json={}, headers={**key, "Sec-Fetch-Site": "cross-site"})  # an Origin-less write
    assert sneaky.status_code == 403
    read = client.get("/info", headers={**key, "Origin": evil})  # a read the browser will not hand over
    assert read.status_code == 200 and "access-control-allow-origin" not in read.headers
