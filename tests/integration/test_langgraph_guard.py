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
    env = app_env(
        tmp_path, TOOLS_BACKEND="none", API_TOKEN="s3cret-token", LANGGRAPH_API_CORS_ORIGINS=f"{UI}, http://other.example"
    )
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


@pytest.mark.parametrize("auth", [{}, {"AUTH": "proxy", "TRUSTED_PROXY_IPS": "127.0.0.1", "API_TOKEN": "t"}])
def test_a_page_of_another_origin_gets_nothing_without_a_token_it_sends_itself(tmp_path: Path, auth: dict[str, str]) -> None:
    """Issue 42: with `*` on a server without a token, a page elsewhere read every thread
    and approved a tool call. A browser's ambient credentials (none needed at all, or a
    proxy's login) never serve another origin: only a token the page sends."""
    env = app_env(tmp_path, TOOLS_BACKEND="none", LANGGRAPH_API_CORS_ORIGINS="*", **auth)
    container = create_container(env)
    app = create_lgapi_app(container.services(), container.settings(), asyncio.Event())
    ann = {"Remote-User": "ann"} if auth else {}
    with TestClient(app, client=("127.0.0.1", 40000)) as c:
        made = c.post("/threads", json={}, headers=ann)  # the SDK, or the proxy's own page: no Origin
        assert made.status_code == 200, made.text
        tid = made.json()["thread_id"]
        for method, path in [
            ("GET", f"/threads/{tid}"),
            ("POST", "/threads/search"),
            ("GET", f"/threads/{tid}/state"),
            ("POST", f"/threads/{tid}/runs/wait"),
        ]:
            # an allowed origin (`*`); or a read with no Origin, as an <img> sends (a write
            # without an allowed Origin is refused before: 403)
            for elsewhere in ({"Origin": "http://evil.example"}, *([{"Sec-Fetch-Site": "cross-site"}] * (method == "GET"))):
                r = c.request(method, path, headers={**ann, **elsewhere}, json={} if method == "POST" else None)
                assert r.status_code == 401 and r.json()["error"]["code"] == "UNAUTHORIZED", (path, elsewhere, r.text)
                assert "another origin needs a token" in r.json()["error"]["message"]
        if auth:  # with a token of its own, an allowed origin is served
            got = c.post("/threads/search", json={}, headers={"Origin": "http://evil.example", "X-Api-Key": "t"})
            assert got.status_code == 200 and got.headers["access-control-allow-origin"] == "http://evil.example"


async def test_serve_checks_cors_against_the_users_in_the_database(tmp_path: Path) -> None:
    """`sophos serve` refuses LANGGRAPH_API_CORS_ORIGINS while no login is needed, and serves
    it once a user exists (their tokens are the login), as with API_TOKEN."""
    from entrypoints.server import BadConfig, check_cors

    env = app_env(tmp_path, TOOLS_BACKEND="none", LANGGRAPH_API_CORS_ORIGINS="*")
    first = create_container(env)
    try:
        with pytest.raises(BadConfig, match="without a login"):
            await check_cors(first.settings(), first.services().sessions())
        await first.services().users().add("ann")
    finally:
        await close_container(first)
    second = create_container(env)  # the next start
    try:
        await check_cors(second.settings(), second.services().sessions())
    finally:
        await close_container(second)
