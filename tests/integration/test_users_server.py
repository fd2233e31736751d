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
    return subprocess.run([SOPHOS, *args], env=process_env({**env, **extra}), capture_output=True, text=True,
                          timeout=60)


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
        assert page.get("/api/session").json() == {"required": True, "authenticated": True}
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
            thread = read_until_closed(ended, "POST", f"{lg}/threads/{tid}/runs/stream", json=body,
                                       headers=bearer(token))
            time.sleep(1.5)
            assert not ended
            revoked_at = time.monotonic()
            assert sophos(env, "users", "revoke", token_id).returncode == 0
            thread.join(10)
            assert ended and ended[0] - revoked_at < 3.0, "the LangGraph API's stream stayed open after the revoke"
            assert httpx.get(f"{lg}/threads/{tid}", headers=bearer(token)).status_code == 401
        finally:
            server.stop()
