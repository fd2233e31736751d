"""The image of deploy/Containerfile, built here from Debian's packages (tests/deploy/image.py)
and run for real with podman: non-root, runtime dependencies only, refusing 0.0.0.0 without a
token, a HEALTHCHECK that follows readyz, a read-only root, and a container killed mid-answer
whose run goes on after `podman start` (AUTO_RESUME), nothing lost; two containers on one
PostgreSQL database, one killed and its run adopted by the other."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.deploy.image import IMAGE, RUNTIME, build, podman
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.server import free_port, sse_events

pytestmark = [pytest.mark.deploy, pytest.mark.timeout(2400)]
TOKEN = "deploy-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def image() -> str:
    return build()


@pytest.fixture(scope="module")
def runtime(image: str) -> None:
    """Skips, with podman's exact error, the tests that need a running container when no
    runtime can run one here; the chroot test below still starts the image's entrypoint."""
    probe = podman("run", *RUNTIME, "--rm", "--network", "none", "--entrypoint", "true", image, check=False)
    if probe.returncode != 0:
        pytest.skip(f"podman cannot run a container here (exit {probe.returncode}): {probe.stderr.strip()}")


@pytest.fixture
def containers(runtime: None) -> Iterator[list[str]]:
    """Names of the containers a test starts (and volumes of the same name), removed after it."""
    names: list[str] = []
    yield names
    for name in names:
        podman("rm", "--force", "--time", "0", name, check=False)
        podman("volume", "rm", "--force", name, check=False)


def start(containers: list[str], *args: str, env: dict[str, str] | None = None, command: tuple[str, ...] = ()) -> str:
    name = f"sophos-test-{uuid.uuid4().hex[:8]}"
    containers.append(name)
    flags = [f"--env={k}={v}" for k, v in (env or {}).items()]
    podman("run", *RUNTIME, "-d", "--name", name, "--volume", f"{name}:/data", *flags, *args, IMAGE, *command)
    return name


def wait_for_log(name: str, text: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        logs = podman("logs", name, check=False)
        if text in logs.stdout + logs.stderr:
            return logs.stdout + logs.stderr
        if podman("inspect", "--format", "{{.State.Running}}", name).stdout.strip() != "true":
            raise AssertionError(f"{name} stopped:\n{logs.stdout}{logs.stderr}")
        time.sleep(0.2)
    raise AssertionError(f"{text!r} not in the logs of {name} within {timeout} s")


def test_the_image_runs_sophos_serve_as_a_non_root_user_with_a_data_volume(image: str, runtime: None) -> None:
    inspected = json.loads(podman("image", "inspect", image).stdout)[0]
    config = inspected["Config"]
    assert config["User"] == "sophos:sophos"
    assert config["Entrypoint"] == ["sophos"] and config["Cmd"] == ["serve"]
    assert "/data" in config["Volumes"]
    assert inspected["Healthcheck"]["Test"] == ["CMD", "/opt/sophos/venv/bin/python", "/opt/sophos/app/deploy/healthcheck.py"]
    env = dict(e.split("=", 1) for e in config["Env"])
    assert env["HOST"] == "0.0.0.0" and env["DATABASE_PATH"].startswith("/data/")
    assert env["MEMORY_FILE_PATH"].startswith("/data/")
    probe = podman(
        "run",
        *RUNTIME,
        "--rm",
        "--network",
        "none",
        "--entrypoint",
        "sh",
        image,
        "-c",
        "id -u; test -w /data && echo data-writable; command -v npm || echo no-npm; "
        "python -c 'import pytest' 2>/dev/null || echo no-test-tools; "
        "ls /opt/sophos/app/config/mcp-servers/node_modules/@modelcontextprotocol/server-memory/dist/index.js "
        "/opt/sophos/app/src/entrypoints/http/web/node_modules/marked/package.json",
    )
    lines = probe.stdout.split()
    assert lines[:4] == ["10001", "data-writable", "no-npm", "no-test-tools"], probe.stdout
    assert len(lines) == 6  # both npm ci trees are there


def test_without_api_token_it_refuses_to_listen_beyond_loopback(image: str, runtime: None) -> None:
    run = podman("run", *RUNTIME, "--rm", "--network", "none", image, check=False)
    assert run.returncode == 2, run
    assert "refusing to listen on 0.0.0.0 without API_TOKEN" in run.stderr + run.stdout


def test_the_healthcheck_follows_readyz_with_the_token_on_a_read_only_root(image: str, containers: list[str]) -> None:
    # no network at all: the model server is unreachable, so readyz answers 503
    unready = start(containers, "--network", "none", "--read-only", "--tmpfs", "/tmp", env={"API_TOKEN": TOKEN})
    # the demo model is always ready; the real MCP servers (Node's Memory, Python's Fetch) start
    ready = start(
        containers, "--network", "none", "--read-only", "--tmpfs", "/tmp", env={"API_TOKEN": TOKEN, "MODEL_BACKEND": "demo"}
    )
    for name in (unready, ready):
        wait_for_log(name, "Sophos is listening on http://0.0.0.0:8000")
        wait_for_log(name, "MCP server fetch:")  # both tool servers up: readyz's first answer is not a start-up's
    failing = podman("healthcheck", "run", unready, check=False)
    assert failing.returncode == 1 and "unhealthy" in failing.stdout + failing.stderr, failing
    passing = podman("healthcheck", "run", ready, check=False)
    assert passing.returncode == 0, passing
    # what readyz said inside, the token sent as the check sends it
    body = podman(
        "exec",
        ready,
        "python",
        "-c",
        "import os, urllib.request as u; r = u.Request('http://127.0.0.1:8000/api/readyz', "
        "headers={'Authorization': 'Bearer ' + os.environ['API_TOKEN']}); print(u.urlopen(r).read().decode())",
    )
    tools = {t["name"]: t["ok"] for t in json.loads(body.stdout)["tools"]}
    assert tools == {"memory": True, "fetch": True}, body.stdout


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with fake_ollama() as fake:
        yield fake


def finished(url: str, cid: str, timeout: float = 60) -> dict[str, Any]:
    """The conversation once its run has ended (the server may still be starting)."""
    deadline = time.monotonic() + timeout
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        try:
            body = httpx.get(f"{url}/api/conversations/{cid}", headers=AUTH, timeout=10).json()
            if body["conversation"]["status"] != "running" and body["messages"][-1]["role"] == "assistant":
                return body
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    return body


def runs_of(name: str, cid: str) -> list[tuple[str, str]]:
    with sqlite3.connect(volume_path(name) / "db" / "sophos.db") as db:
        rows = db.execute(
            "SELECT status, trigger FROM runs WHERE conversation_id = ? ORDER BY started_at, rowid", (cid,)
        ).fetchall()
    return [(str(status), str(trigger)) for status, trigger in rows]


def volume_path(name: str) -> Path:
    return Path(podman("volume", "inspect", "--format", "{{.Mountpoint}}", name).stdout.strip())


def test_a_container_killed_mid_answer_resumes_the_run_after_a_restart(
    image: str, containers: list[str], ollama: FakeOllama
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    ollama.add({"text": "slow " * 200, "token_delay": 0.05}, {"text": "the resumed answer"})
    # the host's network, so the container reaches the fake model on the host's loopback
    # (and the test reaches the container there; the image's 0.0.0.0 would open it to the LAN)
    name = start(
        containers,
        "--network",
        "host",
        env={
            "API_TOKEN": TOKEN,
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "LANGGRAPH_API_PORT": "0",
            "OLLAMA_HOST": ollama.url,
            "AUTO_RESUME": "true",
            "TOOLS_BACKEND": "none",
        },
    )
    wait_for_log(name, f"Sophos is listening on {url}")
    cid = httpx.post(f"{url}/api/chat", json={"message": "tell me slowly"}, headers=AUTH, timeout=30).json()["conversation"]

    events: list[tuple[str | None, str, Any]] = []

    def follow() -> None:
        try:
            with httpx.stream("GET", f"{url}/api/chat", params={"conversation": cid}, headers=AUTH, timeout=60) as r:
                events.extend(sse_events(r))
        except httpx.HTTPError:
            pass  # the container was killed under the stream

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    deadline = time.monotonic() + 30
    while sum(1 for e in events if e[1] == "token") < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sum(1 for e in events if e[1] == "token") >= 5, events[:5]
    podman("kill", "--signal", "KILL", name)  # mid-answer: no drain, no last write
    reader.join(10)
    assert podman("inspect", "--format", "{{.State.Running}}", name).stdout.strip() == "false"
    assert not any(e[1] in ("end", "chat-error") for e in events)  # it was cut short

    podman("start", name)  # the same container and volume: a restart
    body = finished(url, cid)
    assert body["conversation"]["status"] == "completed", body
    user = [m["content"] for m in body["messages"] if m["role"] == "user"]
    assert user == ["tell me slowly"]  # acknowledged before the kill: kept, once
    assert body["messages"][-1]["content"] == "the resumed answer"
    assert runs_of(name, cid) == [("interrupted", "user"), ("completed", "adopt")]


def test_a_stop_drains_within_the_grace_period_and_the_run_goes_on_after_start(
    image: str, containers: list[str], ollama: FakeOllama
) -> None:
    """`podman stop` sends the image's STOPSIGNAL (SIGTERM): the drain stops the run as
    interrupted after SHUTDOWN_TIMEOUT and the process exits 0 before the runtime's own
    timeout would SIGKILL it (137); the next start resumes the run."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    ollama.add({"text": "slow " * 400, "token_delay": 0.05}, {"text": "after the drain"})
    name = start(
        containers,
        "--network",
        "host",
        env={
            "API_TOKEN": TOKEN,
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "LANGGRAPH_API_PORT": "0",
            "OLLAMA_HOST": ollama.url,
            "AUTO_RESUME": "true",
            "TOOLS_BACKEND": "none",
            "SHUTDOWN_TIMEOUT": "2",
        },
    )
    wait_for_log(name, f"Sophos is listening on {url}")
    cid = httpx.post(f"{url}/api/chat", json={"message": "a long one"}, headers=AUTH, timeout=30).json()["conversation"]
    deadline = time.monotonic() + 30
    while ollama.streamed < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    began = time.monotonic()
    podman("stop", "--time", "20", name, timeout=60)
    took = time.monotonic() - began
    assert podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip() == "0"
    assert took < 15, took  # drained (2 s + the streams' 5 s at most), not killed at 20 s
    assert runs_of(name, cid) == [("interrupted", "user")]
    podman("start", name)
    body = finished(url, cid)
    assert body["messages"][-1]["content"] == "after the drain"
    assert runs_of(name, cid) == [("interrupted", "user"), ("completed", "adopt")]


def test_replicas_on_postgresql_adopt_the_run_of_a_killed_container(
    image: str, pg_empty_url: str, ollama: FakeOllama, containers: list[str]
) -> None:
    # (fixtures in this order: the containers are removed before their database is dropped)
    """The Helm chart's shape: two containers of the image on one PostgreSQL database (which
    they migrate themselves); one is killed mid-answer and the other adopts its run."""
    ollama.add({"text": "slow " * 200, "token_delay": 0.05}, {"text": "adopted by the other replica"})
    urls = []
    for _ in range(2):
        port = free_port()
        name = start(
            containers,
            "--network",
            "host",
            env={
                "API_TOKEN": TOKEN,
                "HOST": "127.0.0.1",
                "PORT": str(port),
                "LANGGRAPH_API_PORT": "0",
                "OLLAMA_HOST": ollama.url,
                "DATABASE_URL": pg_empty_url,
                "AUTO_RESUME": "true",
                "RUN_LEASE_SECONDS": "3",
                "TOOLS_BACKEND": "none",
            },
        )
        urls.append(f"http://127.0.0.1:{port}")
        wait_for_log(name, f"Sophos is listening on {urls[-1]}")
    first, survivor = containers[-2], urls[1]
    cid = httpx.post(f"{urls[0]}/api/chat", json={"message": "who finishes this?"}, headers=AUTH, timeout=30).json()[
        "conversation"
    ]
    deadline = time.monotonic() + 30
    while ollama.streamed < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    podman("kill", "--signal", "KILL", first)
    body = finished(survivor, cid)
    assert body["messages"][-1]["content"] == "adopted by the other replica", body
    assert [m["content"] for m in body["messages"] if m["role"] == "user"] == ["who finishes this?"]
    with psycopg.connect(pg_empty_url) as db:
        runs = db.execute("SELECT status, trigger FROM runs WHERE conversation_id = %s ORDER BY started_at", (cid,)).fetchall()
    assert runs == [("interrupted", "user"), ("completed", "adopt")]


def test_the_entrypoint_serves_readyz_in_a_chroot_of_the_image(image: str) -> None:
    """Without any container runtime: the image's own file system (podman mount of a created,
    never started container), entered with chroot as the image's user, its environment and
    entrypoint, in a private mount namespace that holds /dev and /proc."""
    inspected = json.loads(podman("image", "inspect", image).stdout)[0]["Config"]
    created = podman("create", image).stdout.strip()
    root = podman("mount", created).stdout.strip()
    port = free_port()
    env = dict(e.split("=", 1) for e in inspected["Env"])
    env.update(
        {
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "LANGGRAPH_API_PORT": "0",
            "API_TOKEN": TOKEN,
            "MODEL_BACKEND": "demo",
            "TOOLS_BACKEND": "mcp",
        }
    )
    command = " ".join(inspected["Entrypoint"] + inspected["Cmd"])
    inner = f"cd {inspected['WorkingDir']} && exec {command}"
    user = "10001:10001"
    script = (
        f'mount --rbind /dev "{root}/dev" && mount -t proc proc "{root}/proc" && '
        f'exec chroot --userspec={user} "{root}" /usr/bin/env -i '
        + " ".join(f"'{k}={v}'" for k, v in env.items())
        + f" sh -c '{inner}'"
    )
    server = subprocess.Popen(
        ["unshare", "--mount", "--fork", "--propagation", "private", "sh", "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        ready = None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/api/readyz", headers=AUTH, timeout=5)
                if ready.status_code == 200 and all(t["ok"] for t in ready.json()["tools"]):
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        assert ready is not None and ready.status_code == 200, (ready, server.poll())
        assert {t["name"]: t["ok"] for t in ready.json()["tools"]} == {"memory": True, "fetch": True}
        uid = subprocess.run(["ps", "-o", "uid=", "--ppid", str(server.pid)], capture_output=True, text=True).stdout
        assert uid.split() == ["10001"], uid
    finally:
        os.killpg(server.pid, 15)
        server.wait(40)
        podman("umount", created, check=False)
        podman("rm", "--volumes", created, check=False)
