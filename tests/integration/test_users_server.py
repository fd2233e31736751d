"""Users against a real `sophos serve`: tokens made with `sophos users`, another user's
conversation unreachable from the CLI (`--server`), and a revoke, a disable or a log-out
that ends the API access and the streams in progress at once."""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.app import SOPHOS, app_env, process_env
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.server import LiveServer, free_port

EXIT_NOT_FOUND = 3


def sophos(env: dict[str, str], *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SOPHOS, *args], env=process_env({**env, **extra}), capture_output=True, text=True, timeout=60)


def add_user(env: dict[str, str], name: str) -> tuple[str, str]:
    """The new user's first token id and token, as `sophos users add` shows them once."""
    done = sophos(env, "users", "add", name)
    assert done.returncode == 0, done.stderr
    found = re.search(r"token (t_[0-9a-f]{16}): (sophos_\S+)", done.stdout)
    assert found is not None, done.stdout
    return found[1], found[2]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[LiveServer, dict[str, str], FakeOllama]]:
    with fake_ollama() as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        server = LiveServer(env, tmp_path)
        try:
            yield server, env, fake
        finally:
            server.stop()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def read_until_closed(ended: list[float], method: str, url: str, **request: Any) -> threading.Thread:
    """Reads an event stream on a thread; `ended` gets the moment the server closed it."""

    def follow() -> None:
        with httpx.stream(method, url, timeout=60, **request) as response:
            assert response.status_code == 200
            for _ in response.iter_bytes():
                pass
        ended.append(time.monotonic())

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    return thread


def stream_until_closed(server: LiveServer, cid: str, headers: dict[str, str], ended: list[float]) -> threading.Thread:
    return read_until_closed(ended, "GET", f"{server.url}/api/chat", params={"conversation": cid}, headers=headers)


def a_stalled_run(server: LiveServer, fake: FakeOllama, headers: dict[str, str]) -> str:
    fake.add({"stall": 30})  # the model answers nothing for 30 s: the run stays active
    started = httpx.post(f"{server.url}/api/chat", json={"message": "wait"}, headers=headers, timeout=30)
    assert started.status_code == 200, started.text
    return str(started.json()["conversation"])


def test_a_revoked_token_ends_its_stream_and_its_access_at_once(served: Any) -> None:
    server, env, fake = served
    token_id, token = add_user(env, "bob")
    server.start()
    cid = a_stalled_run(server, fake, bearer(token))
    ended: list[float] = []
    thread = stream_until_closed(server, cid, bearer(token), ended)
    time.sleep(1.0)
    assert not ended  # the run is still going: the stream is open
    revoked_at = time.monotonic()
    done = sophos(env, "users", "revoke", token_id)
    assert done.returncode == 0, done.stderr
    thread.join(10)
    assert ended and ended[0] - revoked_at < 3.0, "the stream stayed open after the revoke"
    assert httpx.get(f"{server.url}/api/conversations", headers=bearer(token)).status_code == 401


def test_disable_ends_the_pages_session_and_its_stream(served: Any) -> None:
    server, env, fake = served
    _, token = add_user(env, "cy")
    server.start()
    with httpx.Client(base_url=server.url, timeout=30) as page:
        assert page.post("/api/session", json={"token": token}).status_code == 200
        header = {"Cookie": "; ".join(f"{k}={v}" for k, v in page.cookies.items())}
        assert page.get("/api/session").json() == {
            "required": True,
            "authenticated": True,
            "user": {"name": "cy", "role": "user"},
        }
        fake.add({"stall": 30})
        cid = page.post("/api/chat", json={"message": "wait"}).json()["conversation"]
        ended: list[float] = []
        thread = stream_until_closed(server, cid, header, ended)
        time.sleep(1.0)
        assert not ended
        disabled_at = time.monotonic()
        assert sophos(env, "users", "disable", "cy").returncode == 0
        thread.join(10)
        assert ended and ended[0] - disabled_at < 3.0, "the stream stayed open after the disable"
        assert page.get("/api/session").json() == {"required": True, "authenticated": False}
        assert page.get("/api/conversations").status_code == 401


def test_log_out_ends_the_pages_stream(served: Any) -> None:
    server, env, fake = served
    _, token = add_user(env, "dee")
    server.start()
    with httpx.Client(base_url=server.url, timeout=30) as page:
        assert page.post("/api/session", json={"token": token}).status_code == 200
        header = {"Cookie": "; ".join(f"{k}={v}" for k, v in page.cookies.items())}
        fake.add({"stall": 30})
        cid = page.post("/api/chat", json={"message": "wait"}).json()["conversation"]
        ended: list[float] = []
        thread = stream_until_closed(server, cid, header, ended)
        time.sleep(1.0)
        assert not ended
        out_at = time.monotonic()
        assert page.delete("/api/session").status_code == 204
        thread.join(10)
        assert ended and ended[0] - out_at < 3.0, "the stream stayed open after the log-out"


def test_the_cli_with_another_users_token_finds_nothing_of_theirs(served: Any) -> None:
    server, env, fake = served
    _, ann = add_user(env, "ann")
    _, bob = add_user(env, "bob")
    server.start()
    fake.add({"content": "the answer"})
    started = httpx.post(f"{server.url}/api/chat", json={"message": "mine"}, headers=bearer(ann), timeout=30)
    cid = started.json()["conversation"]
    for args in (("rename", cid, "stolen"), ("delete", "-y", cid), ("cancel", cid)):
        done = sophos(env, *args, "--server", server.url, SOPHOS_TOKEN=bob)
        assert done.returncode == EXIT_NOT_FOUND, (args, done.returncode, done.stdout, done.stderr)
    title = httpx.get(f"{server.url}/api/conversations/{cid}", headers=bearer(ann)).json()["conversation"]["title"]
    assert title != "stolen"
    done = sophos(env, "rename", cid, "renamed by ann", "--server", server.url, SOPHOS_TOKEN=ann)
    assert done.returncode == 0, done.stderr


def test_a_revoked_token_ends_a_langgraph_api_stream(tmp_path: Path) -> None:
    lg_port = free_port()
    with fake_ollama() as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none", LANGGRAPH_API_PORT=str(lg_port))
        token_id, token = add_user(env, "eve")
        server = LiveServer(env, tmp_path).start()
        try:
            lg = f"http://127.0.0.1:{lg_port}"
            tid = httpx.post(f"{lg}/threads", json={}, headers=bearer(token), timeout=30).json()["thread_id"]
            fake.add({"stall": 30})  # the run stays active: only a revoke can end its stream now
            ended: list[float] = []
            body = {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "wait"}]}}
            thread = read_until_closed(ended, "POST", f"{lg}/threads/{tid}/runs/stream", json=body, headers=bearer(token))
            time.sleep(1.5)
            assert not ended
            revoked_at = time.monotonic()
            assert sophos(env, "users", "revoke", token_id).returncode == 0
            thread.join(10)
            assert ended and ended[0] - revoked_at < 3.0, "the LangGraph API's stream stayed open after the revoke"
            assert httpx.get(f"{lg}/threads/{tid}", headers=bearer(token)).status_code == 401
        finally:
            server.stop()


def until_refused(server: LiveServer) -> None:
    """Until the server has noticed the first user (it checks at most once a second)."""
    deadline = time.monotonic() + 10
    while server.get("/api/conversations").status_code != 401:
        assert time.monotonic() < deadline, "the server never asked for a token"
        time.sleep(0.05)


def test_the_first_user_says_what_changed_and_claim_gives_the_owner_their_history(served: Any) -> None:
    server, env, fake = served
    server.start()
    fake.add({"text": "my old answer"})
    mine = httpx.post(f"{server.url}/api/chat", json={"message": "my old question"}, timeout=30).json()["conversation"]
    server.get(f"/api/chat?conversation={mine}")  # to its end

    added = sophos(env, "users", "add", "ann")
    assert added.returncode == 0, added.stderr
    notes = [line for line in added.stderr.splitlines() if line.startswith("note: ")]
    assert len(notes) == 2, added.stderr
    assert "first user" in notes[0] and "token or a login" in notes[0]
    assert "1 conversation(s) made without a token" in notes[1] and "`sophos users claim YOUR_NAME`" in notes[1]
    until_refused(server)
    ann = re.search(r"token t_[0-9a-f]{16}: (sophos_\S+)", added.stdout)
    assert ann is not None
    assert server.get("/api/conversations", headers=bearer(ann[1])).json()["conversations"] == []

    claimed = sophos(env, "users", "claim", "me")
    assert claimed.returncode == 0, claimed.stderr
    assert re.search(r"^added me \(u_[0-9a-f]{16}, admin\)$", claimed.stdout, re.M), claimed.stdout
    me = re.search(r"token t_[0-9a-f]{16}: (sophos_\S+)", claimed.stdout)
    assert me is not None and "gave me the bootstrap admin's 1 conversation(s)" in claimed.stdout
    listed = server.get("/api/conversations", headers=bearer(me[1])).json()["conversations"]
    assert [c["id"] for c in listed] == [mine]
    detail = server.get(f"/api/conversations/{mine}", headers=bearer(me[1])).json()
    assert detail["messages"][-1]["content"] == "my old answer"
    assert server.get(f"/api/conversations/{mine}", headers=bearer(ann[1])).status_code == 404
    assert server.get("/api/session", headers=bearer(me[1])).json()["user"] == {"name": "me", "role": "admin"}

    again = sophos(env, "users", "claim", "me")  # nothing left: no new user, no new token
    assert again.returncode == 0 and "added" not in again.stdout and "token" not in again.stdout
    assert "gave me the bootstrap admin's 0 conversation(s)" in again.stdout
    owner = sophos(env, "users", "add", "bob", "--owner", "--no-token")
    assert owner.returncode == 0, owner.stderr
    assert "(u_" in owner.stdout and ", admin)" in owner.stdout and "note:" not in owner.stderr
