"""The LangGraph API acts as the caller too: user B with user A's thread and run ids gets
exactly what unknown ids get, on every route that takes them, and A's rows stay as they were."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from domain.principals import Role
from entrypoints.container import close_container, create_container
from entrypoints.lgapi.app import create_lgapi_app
from tests.integration.test_ownership import SECRET, masked, sqlite_rows
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama


@pytest.fixture
def lg(tmp_path: Path, ollama: FakeOllama) -> Iterator[dict[str, Any]]:
    env = app_env(tmp_path, ollama.url, TOOLS_BACKEND="none")
    container = create_container(env)
    app = create_lgapi_app(container.services(), container.settings(), asyncio.Event())
    with TestClient(app) as client:
        users = container.services().users()
        keys = {}
        for name in ("ann", "bob"):
            user = client.portal.call(users.add, name, Role.USER)  # type: ignore[union-attr]
            keys[name] = {"X-Api-Key": client.portal.call(users.issue_token, user.id, "").token}  # type: ignore[union-attr]
        yield {"client": client, "keys": keys, "rows": sqlite_rows(env["DATABASE_PATH"]), "app": app}
        client.portal.call(close_container, container)  # type: ignore[union-attr]


def test_another_users_threads_and_runs_answer_as_unknown(lg: dict[str, Any]) -> None:
    client, keys = lg["client"], lg["keys"]
    assert client.get("/threads/search", headers=keys["bob"]).status_code in (404, 405)  # a POST route
    thread = client.post("/threads", json={}, headers=keys["ann"]).json()["thread_id"]
    done = client.post(
        f"/threads/{thread}/runs/wait",
        headers=keys["ann"],
        json={"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": SECRET}]}},
    )
    assert done.status_code == 200, done.text
    run = client.get(f"/threads/{thread}/runs", headers=keys["ann"]).json()[0]["run_id"]
    ids = {"thread_id": thread, "run_id": run}
    unknown = {"thread_id": str(uuid.uuid4()), "run_id": str(uuid.uuid4())}
    before = lg["rows"]()
    covered = []
    for route in lg["app"].routes:
        if not isinstance(route, Route) or "{thread_id" not in route.path:
            continue
        for method in sorted((route.methods or set()) - {"HEAD"}):

            def url(values: dict[str, str]) -> str:
                return re.sub(r"\{(\w+)(:\w+)?\}", lambda m: values.get(m[1], "x"), route.path)  # noqa: B023

            body = {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "hi"}]}}
            kw: dict[str, Any] = {"json": body} if method in ("POST", "PATCH", "PUT") else {}
            as_bob = client.request(method, url(ids), headers=keys["bob"], **kw)
            as_unknown = client.request(method, url(unknown), headers=keys["bob"], **kw)
            label = f"{method} {route.path}"
            assert as_bob.status_code == as_unknown.status_code, (label, as_bob.text, as_unknown.text)
            assert masked(as_bob.text, thread, run) == masked(as_unknown.text, *unknown.values()), label
            assert as_bob.status_code >= 400 and SECRET not in as_bob.text, (label, as_bob.text)
            assert lg["rows"]() == before, f"{label} changed A's data"
            covered.append(label)
    assert len(covered) >= 15, covered
    found = client.post("/threads/search", json={}, headers=keys["bob"]).json()
    assert thread not in str(found)
    assert thread in str(client.post("/threads/search", json={}, headers=keys["ann"]).json())


def test_a_taken_thread_id_answers_409_whoever_holds_it(lg: dict[str, Any]) -> None:
    """Ids are global: one another user holds cannot be made, so it answers as a taken id
    does (409), never 404 for theirs beside 200 for one's own; only one's own thread is
    given back by `if_exists: do_nothing` (as langgraph-api does) or run on by `if_not_exists`."""
    client, keys = lg["client"], lg["keys"]
    thread = client.post("/threads", json={}, headers=keys["ann"]).json()["thread_id"]
    before = lg["rows"]()
    run = {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "hi"}]}, "if_not_exists": "create"}
    taken = {"error": {"code": "CONVERSATION_EXISTS", "message": "Thread already exists"}}
    for body in (
        {"thread_id": thread},
        {"thread_id": thread, "if_exists": "raise"},
        {"thread_id": thread, "if_exists": "do_nothing"},
    ):
        as_bob = client.post("/threads", json=body, headers=keys["bob"])
        assert (as_bob.status_code, as_bob.json()) == (409, taken), (body, as_bob.text)
    as_bob = client.post(f"/threads/{thread}/runs/wait", json=run, headers=keys["bob"])
    assert (as_bob.status_code, as_bob.json()) == (409, taken), as_bob.text
    assert lg["rows"]() == before
    as_ann = client.post("/threads", json={"thread_id": thread}, headers=keys["ann"])
    assert (as_ann.status_code, as_ann.json()) == (409, taken)
    assert (
        client.post("/threads", json={"thread_id": thread, "if_exists": "do_nothing"}, headers=keys["ann"]).json()["thread_id"]
        == thread
    )
    assert client.post(f"/threads/{thread}/runs/wait", json=run, headers=keys["ann"]).status_code == 200
    free = str(uuid.uuid4())
    assert client.post("/threads", json={"thread_id": free}, headers=keys["bob"]).json()["thread_id"] == free
