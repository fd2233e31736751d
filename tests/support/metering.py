"""A Sophos app in this process with two users (`ann`, `bob`) and the bootstrap admin, on
SQLite or PostgreSQL, a clock the test moves for the usage meter, and a helper that runs a
turn to its end (the usage and audit tests, issue 47)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from domain.principals import Role
from entrypoints.container import Container, create_container
from entrypoints.http.app import create_app
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama

DAY = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


@dataclass
class Clock:
    now: datetime = DAY

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Setup:
    client: TestClient
    container: Container
    clock: Clock
    tokens: dict[str, dict[str, str]]  # user name -> Authorization header
    env: dict[str, str]  # the app's settings, for a CLI on the same database


def start_setup(tmp_path: Path, ollama: FakeOllama, database: dict[str, str], **settings: Any) -> Setup:
    """The app started (the caller exits `client`), its users made, the fake model instant."""
    ollama.latency = 0.0
    env = app_env(tmp_path, ollama.url, TOOLS_BACKEND="demo", API_TOKEN="admin-token", **database)
    env.update({k: str(v) for k, v in settings.items()})
    container, clock = create_container(env), Clock()
    container.meter().clock = clock  # the meter counts days and checks the quota on it
    container.usage().clock = clock
    client = TestClient(create_app(container))
    client.__enter__()
    users = client.app.state.services.users()
    tokens = {"admin": {"Authorization": "Bearer admin-token"}}
    for name in ("ann", "bob"):
        user = client.portal.call(users.add, name, Role.USER)
        tokens[name] = {"Authorization": f"Bearer {client.portal.call(users.issue_token, user.id, '').token}"}
    return Setup(client, container, clock, tokens, env)


def turn(setup: Setup, who: str, body: dict[str, Any]) -> list[tuple[str, Any]]:
    """Start a run as `who` and read its events to the end."""
    started = setup.client.post("/api/chat", json=body, headers=setup.tokens[who])
    assert started.status_code == 200, started.text
    cid = started.json()["conversation"]
    out: list[tuple[str, Any]] = []
    with setup.client.stream("GET", f"/api/chat?conversation={cid}", headers=setup.tokens[who]) as response:
        event = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event is not None:
                out.append((event, json.loads(line[6:])))
    return [("conversation", cid), *out]
