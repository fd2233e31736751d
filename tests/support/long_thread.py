"""Drive many turns of one conversation through the real use case (benchmarks, size test)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from adapters.memory.model import ScriptedModel
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.saver import ThreadedSqliteSaver
from tests.support.harness import Harness, make_harness, spec

TEXT = "lorem ipsum dolor sit amet " * 7  # ~190 characters


def turn_replies(turns: int) -> list[Any]:
    out: list[Any] = []
    for i in range(turns):
        out += [[("notes__save", {"text": f"{i} {TEXT}"})], f"{i} {TEXT}"]
    return out


async def note(args: Any, key: str) -> str:
    return f"saved {args['text']}"


def long_thread_harness(db: Path, turns: int, keep: int = 3) -> tuple[Harness, ThreadedSqliteSaver, SqliteRunStore]:
    repo = SqliteRunStore(str(db))
    saver = ThreadedSqliteSaver.open(str(db), keep=keep)
    h = make_harness(turn_replies(turns), tools=[(spec("notes__save"), note)], repo=repo, saver=saver)
    return h, saver, repo


def file_size(db: Path) -> int:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return sum(os.path.getsize(p) for p in (db, Path(f"{db}-wal")) if p.exists())


__all__ = ["ScriptedModel", "TEXT", "file_size", "long_thread_harness"]
