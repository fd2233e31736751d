"""The real stack on a real SQLite file: restarts, migrations, prompt, limits, errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from adapters.sqlite.database import MIGRATIONS
from domain.commands import start_command
from domain.events import StreamEvent
from domain.model import RunStatus
from entrypoints.container import close_container, create_container
from tests.support.app import app_env, config_dir, ledger_server_entry
from tests.support.fake_ollama import fake_ollama


async def chat(container: Any, message: str | None, cid: str | None = None, resume: bool = False) -> list[Any]:
    service = container.run_service()
    started = await service.start(start_command(message, cid, resume))
    events = await service.follow(started.conversation_id, 0)
    assert not isinstance(events, StreamEvent), "the run ended before it could be followed"
    return [(started, e) async for _, e in events]


async def test_a_new_container_on_the_same_file_reads_everything_back(tmp_path: Path) -> None:
    with fake_ollama([{"text": "first answer"}, {"text": "second answer"}]) as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        c1 = create_container(env)
        events = await chat(c1, "remember this")
        cid = events[0][0].conversation_id
        await chat(c1, "and this", cid)
        await close_container(c1)

        c2 = create_container(env)
        detail = await c2.conversations().get(cid)
        assert [m.content for m in detail.messages] == ["remember this", "first answer", "and this", "second answer"]
        assert detail.conversation.message_count == 4 and detail.conversation.status is RunStatus.COMPLETED
        assert not detail.resumable
        # the second turn reached the model with the first turn as context
        assert [m["role"] for m in fake.requests[1]["messages"]] == ["system", "user", "assistant", "user"]
        await close_container(c2)


async def test_migrations_run_once_and_create_the_reference_tables(tmp_path: Path) -> None:
    env = app_env(tmp_path, TOOLS_BACKEND="none")
    for _ in range(2):
        c = create_container(env)
        assert c.store().schema_version == len(MIGRATIONS)
        c.threads().get_thread("x")
        await close_container(c)
    db = sqlite3.connect(env["DATABASE_PATH"])
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"conversations", "runs", "checkpoints", "writes", "tool_calls", "run_events"} <= tables
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    columns = [r[1] for r in db.execute("PRAGMA table_info(conversations)")]
    # the reference's columns, then a conversation's own model and system prompt (issue 32,
    # docs/contract-extensions.md), NULL for the server's default, its owner (issue 31), and
    # how it is organised (issue 48: its system mode, pin, archive, temporary, title's giver, turns)
    assert columns == [
        "id",
        "title",
        "created_at",
        "updated_at",
        "message_count",
        "model",
        "system",
        "owner",
        "system_mode",
        "pinned",
        "archived",
        "temporary",
        "title_by",
        "turns",
    ]
    indexes = {r[1] for r in db.execute("PRAGMA index_list(runs)")}
    assert {"runs_by_conversation", "runs_one_running"} <= indexes


async def test_the_system_prompt_is_read_per_call_and_never_stored(tmp_path: Path) -> None:
    config_dir(tmp_path, system="PROMPT ONE")
    with fake_ollama([{"text": "a"}, {"text": "b"}]) as fake:
        c = create_container(app_env(tmp_path, fake.url, TOOLS_BACKEND="none"))
        events = await chat(c, "hi")
        cid = events[0][0].conversation_id
        (tmp_path / "config" / "system.md").write_text("PROMPT TWO")
        await chat(c, "again", cid)
        assert fake.requests[0]["messages"][0]["content"] == "PROMPT ONE"
        assert fake.requests[1]["messages"][0]["content"] == "PROMPT TWO"
        db = sqlite3.connect(tmp_path / "db" / "sophos.db")
        blobs = db.execute("SELECT checkpoint FROM checkpoints UNION ALL SELECT message FROM checkpoint_messages")
        blob = b"".join(r[0] for r in blobs)
        assert b"again" in blob and b"PROMPT" not in blob
        await close_container(c)


async def test_model_errors_are_recorded_with_their_codes(tmp_path: Path) -> None:
    with fake_ollama() as fake:
        c = create_container(app_env(tmp_path, fake.url, TOOLS_BACKEND="none", OLLAMA_MODEL="missing"))
        events = await chat(c, "hi")
        assert events[-1][1].event == "chat-error" and events[-1][1].data["code"] == "MODEL_UNAVAILABLE"
        await close_container(c)
    c = create_container(app_env(tmp_path, "http://127.0.0.1:9", TOOLS_BACKEND="none"))
    events = await chat(c, "hi")
    assert events[-1][1].data["code"] == "MODEL_UNREACHABLE"
    cid = events[0][0].conversation_id
    conv = await c.conversations().get(cid)
    assert conv.conversation.error is not None and conv.conversation.error.code == "MODEL_UNREACHABLE"
    assert conv.resumable
    await close_container(c)


async def test_the_recursion_limit_stops_an_endless_tool_loop(tmp_path: Path) -> None:
    config_dir(tmp_path, {"ledger": ledger_server_entry(tmp_path / "ledger.jsonl")})
    loop = {"tool_calls": [("ledger__append", {"label": "x"})]}
    with fake_ollama([loop] * 20) as fake:
        c = create_container(app_env(tmp_path, fake.url, AGENT_RECURSION_LIMIT=5))
        events = await chat(c, "loop")
        assert events[-1][1].data["code"] == "RECURSION_LIMIT"
        await close_container(c)


async def test_switching_the_model_backend_is_a_config_change_on_the_same_data(tmp_path: Path) -> None:
    from tests.support.fake_openai import fake_openai

    with fake_ollama([{"text": "from ollama"}]) as ollama, fake_openai([{"text": "from openai"}]) as oai:
        c1 = create_container(app_env(tmp_path, ollama.url, TOOLS_BACKEND="none"))
        events = await chat(c1, "hello")
        cid = events[0][0].conversation_id
        await close_container(c1)
        c2 = create_container(app_env(tmp_path, TOOLS_BACKEND="none", MODEL_BACKEND="openai", OPENAI_BASE_URL=oai.url))
        await chat(c2, "and now?", cid)
        messages = (await c2.conversations().get(cid)).messages
        assert [m.content for m in messages] == ["hello", "from ollama", "and now?", "from openai"]
        assert [m["role"] for m in oai.requests[0]["messages"]] == ["system", "user", "assistant", "user"]
        await close_container(c2)
