from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from entrypoints.container import create_container
from entrypoints.http.app import create_app
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama, fake_ollama


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with fake_ollama() as fake:
        # every run lasts long enough for the test's stream to attach while it is live;
        # a run that ends first is answered with the durable `end`, as the contract says
        fake.latency = 0.3
        yield fake


@pytest.fixture
def make_client(tmp_path: Path, ollama: FakeOllama) -> Iterator[Any]:
    clients: list[TestClient] = []

    def make(**settings: Any) -> TestClient:
        env = app_env(tmp_path, ollama.url, TOOLS_BACKEND="none")
        env.update({k: str(v) for k, v in settings.items()})
        client = TestClient(create_app(create_container(env)))
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def client(make_client: Any) -> TestClient:
    return make_client()
