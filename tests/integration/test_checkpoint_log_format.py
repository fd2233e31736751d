"""The checkpoint log keeps a thread's last message in a storage format of its own
(adapters.storage.message_log), not the API's MessageDto. A database whose rows were
written in the old shape migrates, and its JSONL export reads back unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg

from adapters.postgres.database import MIGRATIONS as PG_MIGRATIONS
from adapters.postgres.database import PostgresDatabase, connection_options
from adapters.postgres.log_schema import migrate_log_format
from adapters.postgres.saver import FencedPostgresSaver
from adapters.sqlite.database import MIGRATIONS as SQLITE_MIGRATIONS
from adapters.sqlite.database import connect, migrate
from adapters.sqlite.log_schema import MIGRATION_LOG_FORMAT
from adapters.sqlite.saver import ThreadedSqliteSaver
from adapters.storage import message_log
from domain.model import (
    AssistantMessage,
    CheckpointSummary,
    Message,
    SummaryMessage,
    ToolCall,
    ToolResult,
    UserMessage,
    new_id,
)
from entrypoints.export import checkpoint_jsonl

MESSAGES: list[Message | None] = [
    UserMessage('héllo \x00 \u2713 "quoted" \\ back', id="u1"),
    AssistantMessage("", (ToolCall("c1", "ledger__add", {"a": [1, {"b": None}], "ü": 2.5}),), id="a1"),
    ToolResult("no such account", "c1", "ledger__add", "error", id="t1"),
    ToolResult("fine", "c2", "ledger__get"),
    SummaryMessage("they talked", 4, id="s1"),
    AssistantMessage("plain answer", id=None),
    None,  # a checkpoint of an empty thread
]


def old_dto(message: Message) -> dict[str, Any]:
    """The API's MessageDto as the log stored it before its own format (frozen here)."""
    dto: dict[str, Any] = {"id": message.id, "role": message.role, "content": message.content}
    if isinstance(message, AssistantMessage) and message.tool_calls:
        dto["toolCalls"] = [{"id": c.id, "name": c.name, "args": c.args} for c in message.tool_calls]
    if isinstance(message, ToolResult):
        dto.update(name=message.name, toolCallId=message.tool_call_id, status=message.status)
    if isinstance(message, SummaryMessage):
        dto["covers"] = message.covers
    return dto


def summaries() -> list[CheckpointSummary]:
    return [
        CheckpointSummary(
            f"cp-{i:03}",
            f"2026-01-01T00:00:0{i}+00:00",
            i,
            "loop",
            ("agent",) if i % 2 else (),
            i + 1,
            m,
            f"run-{i}" if i % 3 else None,
            1 + i % 2,
        )
        for i, m in enumerate(MESSAGES)
    ]


def old_rows(thread_id: str) -> list[tuple[Any, ...]]:
    return [
        (
            thread_id,
            "",
            s.checkpoint_id,
            s.created_at,
            s.step,
            s.source,
            json.dumps(list(s.next)),
            s.message_count,
            json.dumps(old_dto(s.last_message), ensure_ascii=False) if s.last_message else None,
            s.run_id,
            s.branch,
        )
        for s in summaries()
    ]


INSERT = (
    "INSERT INTO checkpoint_log (thread_id, checkpoint_ns, checkpoint_id, created_at, step, source, next, "
    "message_count, last_message, run_id, branch) VALUES ({})"
)


def test_messages_round_trip_through_the_storage_format_and_it_has_its_own_names() -> None:
    for m in MESSAGES:
        if m is not None:
            assert message_log.decode(message_log.encode(m)) == m
            assert message_log.decode(json.dumps(old_dto(m))) == m  # a row of the previous version
    cut = AssistantMessage("an answer stopped at the limit", id="a9", cut=True)  # newer than format 0
    assert message_log.decode(message_log.encode(cut)) == cut and '"cut": true' in message_log.encode(cut)
    stored = json.loads(message_log.encode(MESSAGES[2]))  # type: ignore[arg-type]
    assert stored["v"] == 1 and "toolCallId" not in stored and "content" not in stored


async def test_an_old_sqlite_log_migrates_and_exports_unchanged(tmp_path: Path) -> None:
    path = str(tmp_path / "sophos.db")
    thread_id = new_id()
    conn = connect(path)
    migrate(conn)
    conn.executemany(INSERT.format(", ".join("?" * 11)), old_rows(thread_id))
    conn.execute(f"PRAGMA user_version = {SQLITE_MIGRATIONS.index(MIGRATION_LOG_FORMAT)}")  # before the log's format
    conn.commit()
    conn.close()

    saver = ThreadedSqliteSaver.open(path)  # opening migrates
    try:
        exported = checkpoint_jsonl(await saver.history(thread_id))
    finally:
        saver.close()
    assert exported == checkpoint_jsonl(summaries())
    conn = connect(path)
    stored = [json.loads(r[0]) for r in conn.execute("SELECT last_message FROM checkpoint_log WHERE last_message NOT NULL")]
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(SQLITE_MIGRATIONS)
    conn.close()
    assert stored and all(row["v"] == 1 and "content" not in row for row in stored)


async def test_an_old_postgres_log_migrates_and_exports_unchanged(pg_url: str) -> None:
    thread_id = new_id()
    with psycopg.connect(pg_url, **connection_options()) as conn:
        conn.cursor().executemany(INSERT.format(", ".join(["%s"] * 11)), old_rows(thread_id))
        conn.execute("DELETE FROM sophos_migrations WHERE v > %s", (PG_MIGRATIONS.index(migrate_log_format),))

    db = PostgresDatabase(pg_url)
    saver = FencedPostgresSaver(db)
    try:
        exported = checkpoint_jsonl(await saver.history(thread_id))  # the first use migrates
        assert db.schema_version == len(PG_MIGRATIONS)
    finally:
        await db.close()
    assert exported == checkpoint_jsonl(summaries())
    with psycopg.connect(pg_url, **connection_options()) as conn:
        stored = [
            json.loads(r[0])
            for r in conn.execute("SELECT last_message FROM checkpoint_log WHERE last_message IS NOT NULL").fetchall()
        ]
    assert stored and all(row["v"] == 1 and "content" not in row for row in stored)
