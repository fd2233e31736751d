"""The CLI's two clients give the same answers: the local one (the use cases in this
process) and the HTTP one (here over the in-process app), on one database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from domain.errors import SophosError
from entrypoints.cli.client import RemoteError, SophosClient, Stopper
from entrypoints.cli.local import LocalClient
from entrypoints.cli.output import Printer
from entrypoints.cli.remote import HttpClient
from entrypoints.container import create_container
from entrypoints.http.app import create_app
from tests.support.app import app_env


@pytest.fixture
async def clients(tmp_path: Path) -> AsyncIterator[tuple[SophosClient, SophosClient]]:
    container = create_container(app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none"), METRICS_BACKEND="none")
    app = create_app(container, manage_lifecycle=False)
    local = LocalClient(container.services(), container)
    remote = HttpClient("http://127.0.0.1", None, transport=httpx.ASGITransport(app))
    try:
        yield local, remote
    finally:
        await remote.aclose()
        await local.aclose()


async def refusal(call: Any) -> str:
    try:
        await call
    except SophosError as e:
        return e.code.value
    except RemoteError as e:
        return e.code
    raise AssertionError("not refused")


async def test_the_local_and_the_http_client_answer_alike(clients: tuple[SophosClient, SophosClient]) -> None:
    local, remote = clients
    cid, _ = await local.run({"message": "hello there"}, Printer(as_json=True), Stopper())
    await remote.run({"message": "and again", "conversation": cid}, Printer(as_json=True), Stopper())

    assert await local.conversations(None) == await remote.conversations(None)
    assert await local.conversations(1) == await remote.conversations(1)
    detail = await local.conversation(cid)
    assert [m["role"] for m in detail["messages"]] == ["user", "assistant", "user", "assistant"]
    assert detail == await remote.conversation(cid)
    assert await local.search("hello", 5) == await remote.search("hello", 5)
    for fmt in ("md", "jsonl"):
        assert await local.export(cid, fmt) == await remote.export(cid, fmt)
    assert (await remote.rename(cid, "Renamed"))["title"] == "Renamed"
    assert await local.conversation(cid) == await remote.conversation(cid)
    for call in (lambda c: c.cancel(cid), lambda c: c.conversation("nope"), lambda c: c.revoke_rule("x__y")):
        assert await refusal(call(local)) == await refusal(call(remote))
    await remote.delete(cid)
    assert await local.conversations(None) == [] == await remote.conversations(None)
