"""LangGraph's `/store/*` through the SDK (`langgraph_sdk.get_client`) with two users'
tokens, on a real `sophos serve` on SQLite and on PostgreSQL (issue 45): each user sees only
their own namespaces, on every route, and another user's item answers exactly as an unknown
one does (langgraph-api's answer for it: `null`, an empty page, a 204 that changes nothing)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from tests.integration.test_langgraph_api import wait_up
from tests.integration.test_users_server import add_user
from tests.support.app import app_env
from tests.support.server import LiveServer, free_port


def served(tmp_path: Path, **env: str) -> Iterator[tuple[str, dict[str, str]]]:
    lg_port = free_port()
    settings = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none", LANGGRAPH_API_PORT=str(lg_port), **env)
    tokens = {name: add_user(settings, name)[1] for name in ("ann", "bob")}
    server = LiveServer(settings, tmp_path).start()
    try:
        wait_up(f"http://127.0.0.1:{lg_port}/ok")
        yield f"http://127.0.0.1:{lg_port}", tokens
    finally:
        server.stop()


@pytest.fixture
def sqlite_server(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    yield from served(tmp_path)


@pytest.fixture
def postgres_server(tmp_path: Path, pg_url: str) -> Iterator[tuple[str, dict[str, str]]]:
    yield from served(tmp_path, DATABASE_URL=pg_url)


async def each_user_sees_only_their_own(url: str, tokens: dict[str, str]) -> None:
    ann, bob = (get_client(url=url, api_key=tokens[name]) for name in ("ann", "bob"))
    secret = f"ann's secret {uuid.uuid4().hex}"
    await ann.store.put_item(["notes"], key="k", value={"text": secret, "kind": "private"})
    await ann.store.put_item(["notes", "deep"], key="k2", value={"text": "lighthouse keeper"})
    assert (await ann.store.get_item(["notes"], key="k"))["value"]["text"] == secret

    unknown = ["never", uuid.uuid4().hex]
    raw = httpx.AsyncClient(base_url=url, headers={"X-Api-Key": tokens["bob"]})
    # every route, bob on ann's namespace and on one nobody used: the same answer
    for ns, key in ((["notes"], "k"), (unknown, "k")):
        assert await bob.store.get_item(ns, key=key) is None
        assert await bob.store.search_items(ns) == {"items": []}
        assert await bob.store.search_items(ns, query="secret lighthouse") == {"items": []}
        assert await bob.store.search_items(ns, filter={"kind": "private"}) == {"items": []}
    answers = []
    for ns in ("notes", ".".join(unknown)):
        got = await raw.get("/store/items", params={"namespace": ns, "key": "k"})
        deleted = await raw.request("DELETE", "/store/items", json={"namespace": ns.split("."), "key": "k"})
        answers.append((got.status_code, got.text, deleted.status_code, deleted.text))
    assert answers[0] == answers[1] == (200, "null", 204, "")
    assert await bob.store.list_namespaces() == {"namespaces": []}
    assert await bob.store.list_namespaces(prefix=["notes"]) == {"namespaces": []}

    # bob's own ("notes",) is another namespace; his delete never reaches ann's
    await bob.store.put_item(["notes"], key="k", value={"text": "bob's own"})
    assert (await bob.store.get_item(["notes"], key="k"))["value"] == {"text": "bob's own"}
    assert (await ann.store.get_item(["notes"], key="k"))["value"]["text"] == secret
    await bob.store.delete_item(["notes"], key="k")
    assert await bob.store.get_item(["notes"], key="k") is None
    assert (await ann.store.get_item(["notes"], key="k"))["value"]["text"] == secret

    found = await ann.store.search_items(["notes"], query="lighthouse")
    assert [i["key"] for i in found["items"]] == ["k2"] and found["items"][0]["score"] > 0
    assert await ann.store.list_namespaces(prefix=["notes"]) == {"namespaces": [["notes"], ["notes", "deep"]]}
    assert await ann.store.list_namespaces(prefix=["notes"], max_depth=1) == {"namespaces": [["notes"]]}
    assert (await raw.get("/info")).json()["flags"]["store"] is True
    await raw.aclose()


def test_two_users_each_see_only_their_own_store_on_sqlite(sqlite_server: tuple[str, dict[str, str]]) -> None:
    asyncio.run(each_user_sees_only_their_own(*sqlite_server))


def test_two_users_each_see_only_their_own_store_on_postgresql(postgres_server: tuple[str, dict[str, str]]) -> None:
    asyncio.run(each_user_sees_only_their_own(*postgres_server))


def test_hostile_store_requests_get_a_clear_error(sqlite_server: tuple[str, dict[str, str]]) -> None:
    url, tokens = sqlite_server
    with httpx.Client(base_url=url, headers={"X-Api-Key": tokens["ann"]}) as c:
        cases: list[tuple[str, str, dict[str, Any]]] = [
            ("PUT", "/store/items", {"json": {"namespace": ["a.b"], "key": "k", "value": {}}}),
            ("PUT", "/store/items", {"json": {"namespace": [], "key": "k", "value": {}}}),
            ("PUT", "/store/items", {"json": {"namespace": ["a"], "key": "k", "value": "not an object"}}),
            ("PUT", "/store/items", {"json": {"namespace": ["a"], "key": "k", "value": {"v": "\u0000"}}}),
            ("PUT", "/store/items", {"json": {"namespace": ["a"], "key": "k", "value": {}, "ttl": -5}}),
            ("PUT", "/store/items", {"json": {"namespace": "a", "key": "k", "value": {}}}),
            ("GET", "/store/items", {"params": {"namespace": "a..b", "key": "k"}}),
            ("POST", "/store/items/search", {"json": {"namespace_prefix": ["a"], "filter": {"v": {"$where": 1}}}}),
            ("POST", "/store/items/search", {"json": {"namespace_prefix": ["a"], "limit": 100000}}),
            ("POST", "/store/namespaces", {"json": {"max_depth": 0}}),
            ("POST", "/store/items/search", {"json": {"namespace_prefix": ["a"], "refresh_ttl": "yes"}}),
            ("GET", "/store/items", {"params": {"namespace": "a", "key": "k", "refresh_ttl": "maybe"}}),
        ]
        for method, path, kw in cases:
            r = c.request(method, path, **kw)
            assert r.status_code == 422, (method, path, kw, r.status_code, r.text)
        assert c.get("/store/items", params={"namespace": "a"}).status_code == 400  # no key
        big = c.put("/store/items", json={"namespace": ["a"], "key": "k", "value": {"v": "x" * 100_000}})
        assert big.status_code == 413  # the API's bodies are bounded (64 KiB) before any parsing
        assert c.put("/store/items", json={"namespace": ["a"], "key": "k", "value": {}, "extra": 1}).status_code == 400
