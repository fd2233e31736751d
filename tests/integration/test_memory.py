"""Memory of one's own (issue 45 item 2): on a server with two users, the agent's memory
tools write to the user whose conversation calls them, and what it remembers in ann's
conversation never reaches a model request of bob's; people list, edit and forget their
memories through /api/memory and `sophos memory`."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from tests.integration.test_langgraph_api import wait_up
from tests.integration.test_users_server import add_user, sophos
from tests.support.app import ROOT, app_env, config_dir
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.server import LiveServer, free_port

SHIPPED_MEMORY = json.loads((ROOT / "config" / "mcp.json").read_text())["memory"]


def answer(body: dict[str, Any]) -> dict[str, Any]:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return {"text": "Noted."}
    text = last["content"]
    if text.startswith("remember "):
        return {"tool_calls": [("memory__remember", {"text": text.removeprefix("remember ")})]}
    if text.startswith("what do you remember"):
        return {"tool_calls": [("memory__recall", {})]}
    return {"text": "Hello."}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def server(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[LiveServer, dict[str, str], FakeOllama, dict[str, str], str]]:
    # the shipped mcp.json's memory entry: with MEMORY_BACKEND=store (the default) Sophos
    # serves it with its own tools, and the Memory MCP server is never started
    config_dir(tmp_path, {"memory": SHIPPED_MEMORY})
    lg_port = free_port()
    database = {"DATABASE_URL": request.getfixturevalue("pg_url")} if request.param == "postgres" else {}
    with fake_ollama() as fake:
        fake.responder = answer
        env = app_env(tmp_path, fake.url, TOOL_APPROVAL="unsafe", LANGGRAPH_API_PORT=str(lg_port), **database)
        tokens = {name: add_user(env, name)[1] for name in ("ann", "bob")}
        live = LiveServer(env, tmp_path).start()
        try:
            wait_up(f"http://127.0.0.1:{lg_port}/ok")
            yield live, env, fake, tokens, f"http://127.0.0.1:{lg_port}"
        finally:
            live.stop()


def say(lg_url: str, token: str, text: str) -> str:
    client = get_sync_client(url=lg_url, api_key=token)
    thread = client.threads.create()["thread_id"]
    done = client.runs.wait(thread, "agent", input={"messages": [{"type": "human", "content": text}]})
    assert isinstance(done, dict) and done["messages"][-1]["content"] == "Noted.", done
    return str(thread)


def test_what_the_agent_remembers_for_ann_never_reaches_a_model_request_of_bob(
    server: tuple[LiveServer, dict[str, str], FakeOllama, dict[str, str], str],
) -> None:
    live, env, fake, tokens, lg_url = server
    secret = f"ann's locker code is {uuid.uuid4().hex[:8]}"
    say(lg_url, tokens["ann"], f"remember {secret}")
    offered = {t["function"]["name"] for t in fake.requests[0]["tools"]}
    assert {"memory__remember", "memory__recall", "memory__forget"} <= offered and "memory__create_entities" not in offered
    assert not Path(env["MEMORY_FILE_PATH"]).exists()  # the shared file is not written

    ann_api = httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {tokens['ann']}"})
    bob_api = httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {tokens['bob']}"})
    mine = ann_api.get("/api/memory").json()["memories"]
    assert [m["text"] for m in mine] == [secret]
    assert bob_api.get("/api/memory").json() == {"memories": [], "enabled": True}

    ann_done = len(fake.requests)
    say(lg_url, tokens["bob"], "what do you remember about me?")
    bobs = fake.requests[ann_done:]
    assert len(bobs) == 2 and all(secret not in json.dumps(r) for r in bobs)
    assert bobs[-1]["messages"][-1]["content"] == "Nothing remembered yet."

    # bob cannot edit nor forget ann's memory: it answers as an unknown one
    memory = mine[0]["id"]
    for method, kw in (("PATCH", {"json": {"text": "bob was here"}}), ("DELETE", {})):
        theirs = bob_api.request(method, f"/api/memory/{memory}", **kw)
        unknown = bob_api.request(method, "/api/memory/m_unknown", **kw)
        assert theirs.status_code == unknown.status_code == 404 and theirs.json() == unknown.json()
    assert [m["text"] for m in ann_api.get("/api/memory").json()["memories"]] == [secret]

    # ann's own recall finds it (the control: the tool does reach the store)
    ann_before = len(fake.requests)
    say(lg_url, tokens["ann"], "what do you remember about me?")
    assert secret in fake.requests[ann_before:][-1]["messages"][-1]["content"]

    edited = ann_api.patch(f"/api/memory/{memory}", json={"text": "ann likes tea"})
    assert edited.status_code == 200 and edited.json()["memory"]["text"] == "ann likes tea"
    assert ann_api.patch(f"/api/memory/{memory}", json={"text": ""}).status_code == 400

    # the CLI, on the server as ann
    listed = sophos(env, "memory", "list", "--json", "--server", live.url, API_TOKEN=tokens["ann"])
    assert listed.returncode == 0, listed.stderr
    assert [m["text"] for m in json.loads(listed.stdout)["memories"]] == ["ann likes tea"]
    as_bob = sophos(env, "memory", "forget", memory, "--server", live.url, API_TOKEN=tokens["bob"])
    assert as_bob.returncode != 0 and "No such memory" in as_bob.stderr
    gone = sophos(env, "memory", "forget", memory, "--server", live.url, API_TOKEN=tokens["ann"])
    assert gone.returncode == 0, gone.stderr
    assert ann_api.get("/api/memory").json() == {"memories": [], "enabled": True}
