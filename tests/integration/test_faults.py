"""Faults are data, not corruption: a storage failure fails the run with a clear code, the
thread stays resumable and the file passes integrity_check."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from domain.commands import start_command
from domain.events import StreamEvent
from entrypoints.container import close_container, create_container
from tests.support.app import app_env
from tests.support.fake_ollama import fake_ollama


async def run_to_end(container: Any, message: str | None, cid: str | None = None, resume: bool = False) -> list[Any]:
    service = container.run_service()
    started = await service.start(start_command(message, cid, resume))
    events = await service.follow(started.conversation_id, 0)
    if isinstance(events, StreamEvent):  # it ended before it could be followed: the log has it all
        return [e for _, e in await container.store().read(started.run_id, 0)]
    return [e async for _, e in events]


PRAGMAS = [
    ("PRAGMA query_only = 1", "PRAGMA query_only = 0"),  # a read-only database
    ("PRAGMA max_page_count = {pages}", "PRAGMA max_page_count = 1073741823"),  # a full disk
]


def apply(saver: Any, pragma: str) -> None:
    with saver.lock:  # only the checkpointer's connection is limited
        (pages,) = saver.conn.execute("PRAGMA page_count").fetchone()
        saver.conn.execute(pragma.format(pages=pages))


@pytest.mark.parametrize(("pragma", "undo"), PRAGMAS)
async def test_a_database_that_fails_mid_run_fails_the_run_cleanly(tmp_path: Path, pragma: str, undo: str) -> None:
    with fake_ollama([{"text": "first"}]) as fake:
        c = create_container(app_env(tmp_path, fake.url, TOOLS_BACKEND="none"))
        saver = c.checkpointer()
        events = await run_to_end(c, "hello")
        cid = events[-1].data["conversation"]
        # the disk fills up (or turns read-only) while the model answers
        fake.add({"text": "long answer " * 2000, "before": lambda: apply(saver, pragma)}, {"text": "recovered"})
        events = await run_to_end(c, "second", cid)
        assert events[-1].event == "chat-error" and events[-1].data["code"] == "STORAGE_FAILURE"
        detail = await c.conversations().get(cid)
        assert detail.conversation.status is not None and detail.conversation.status.value == "failed"
        assert detail.resumable and [m.content for m in detail.messages][-1] == "second"
        apply(saver, undo)  # room again
        events = await run_to_end(c, None, cid, resume=True)
        assert events[-1].data["status"] == "completed"
        assert [m.content for m in (await c.conversations().get(cid)).messages][-2:] == ["second", "recovered"]
        await close_container(c)
    db = sqlite3.connect(tmp_path / "db" / "sophos.db")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.parametrize(("pragma", "undo"), PRAGMAS)
async def test_a_message_that_cannot_be_saved_is_refused_not_acknowledged(tmp_path: Path, pragma: str, undo: str) -> None:
    from domain.errors import StorageFailure

    c = create_container(app_env(tmp_path, TOOLS_BACKEND="none", MODEL_BACKEND="demo"))
    await c.threads().get_thread("warm-up")  # opens the checkpointer
    apply(c.checkpointer(), pragma)
    with pytest.raises(StorageFailure):
        await c.run_service().start(start_command("not saved " * 3000, None))
    assert await c.store().running_runs() == []
    await close_container(c)


async def test_auto_resume_finishes_interrupted_runs_at_start_up(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from entrypoints.http.app import create_app

    with fake_ollama([{"text": "word " * 300, "token_delay": 0.02}, {"text": "auto resumed"}]) as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        c = create_container(env)
        service = c.run_service()
        started = await service.start(start_command("long", None))
        await c.supervisor().drain(0.1)  # a shutdown: the run is interrupted
        await close_container(c)
        c2 = create_container({**env, "AUTO_RESUME": "true"})
        with TestClient(create_app(c2)) as client:
            cid = started.conversation_id
            body = client.get(f"/api/conversations/{cid}").json()
            if body["conversation"]["status"] == "running":
                with client.stream("GET", f"/api/chat?conversation={cid}") as r:
                    for _ in r.iter_lines():
                        pass
            body = client.get(f"/api/conversations/{cid}").json()
            assert body["conversation"]["status"] == "completed"
            assert body["messages"][-1]["content"] == "auto resumed"
