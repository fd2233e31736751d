"""Storage of one long conversation on PostgreSQL, driven through the HTTP API with the
default settings: 300 turns, each a ~1 KB message and a ~1 KB reply from a fake Ollama.
The figures and targets of issue 28: the checkpoint tables (messages included wherever
they are stored) <= 10 MB, the whole database <= 25 MB, bytes per turn at the end <= 1.3x
those near turn 10 (turns 10-110 against the last 100). No VACUUM is run: autovacuum (with
the tables' own settings) is all."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import psycopg
from starlette.testclient import TestClient
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama
from tests.support.postgres import create_database, drop_database

from bench.table import Row, print_table
from entrypoints.container import create_container
from entrypoints.http.app import create_app

CHECKPOINT_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_messages", "checkpoint_log")
WORDS = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "  # 78 characters


def text(i: int, who: str) -> str:
    return f"{who} {i}: " + (WORDS * 13)[:1000]


def sizes(url: str) -> tuple[int, int]:
    """(checkpoint tables, whole database) in bytes on disk: indexes and TOAST included."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "WHERE c.relkind = 'r' AND c.relname = ANY(%s)",
            (list(CHECKPOINT_TABLES),),
        ).fetchone()
        whole = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return int(row[0]) if row else 0, int(whole[0]) if whole else 0


def tables(url: str) -> str:
    """The largest relations (with their indexes and TOAST), for a look at what grows."""
    with psycopg.connect(url) as conn:
        found = conn.execute(
            "SELECT relname, pg_total_relation_size(relid) FROM pg_stat_user_tables ORDER BY 2 DESC LIMIT 12"
        ).fetchall()
    return ", ".join(f"{name} {size / 1e6:.2f} MB" for name, size in found)


def conversation(server: str, turns: int, marks: tuple[int, ...]) -> dict[int, tuple[int, int]]:
    """Sizes at the turns `marks`, and an empty database's (turn 0)."""
    url = create_database(server)
    tmp = Path(tempfile.mkdtemp(prefix="sophos-bench-pg-api-"))
    ollama = FakeOllama([{"text": text(i, "reply")} for i in range(1, turns + 1)]).start()
    try:
        env = app_env(tmp, ollama.url, TOOLS_BACKEND="none", DATABASE_URL=url)
        out: dict[int, tuple[int, int]] = {}
        with TestClient(create_app(create_container(env))) as client:
            cid = None
            for i in range(1, turns + 1):
                body = {"message": text(i, "user"), **({"conversation": cid} if cid else {})}
                answer = client.post("/api/chat", json=body)
                assert answer.status_code == 200, answer.text
                cid = answer.json()["conversation"]
                deadline = time.monotonic() + 60
                while client.get(f"/api/conversations/{cid}").json().get("activeRun") is not None:
                    assert time.monotonic() < deadline, f"turn {i} never finished"
                    time.sleep(0.01)
                if i == 1:
                    out[0] = sizes(url)
                if i in marks:
                    out[i] = sizes(url)
            if os.environ.get("BENCH_PG_TABLES"):
                print(tables(url))
        return out
    finally:
        ollama.stop()
        drop_database(url)


def rows(server: str, turns: int = int(os.environ.get("BENCH_PG_TURNS", "300"))) -> list[Row]:
    """figure | checkpoint tables | whole database | target | met"""
    # windows of a third of the run: tables grow by whole 8 KB pages and autovacuum runs when
    # it will, so twenty turns (~100 KB) moved the ratio by tenths from run to run
    window = max(turns // 3, 1)
    marks = tuple(sorted({10, 10 + window, 2 * turns // 3, turns - window, turns}))
    s = conversation(server, turns, marks)
    out: list[Row] = [(f"turn {t}", mb(s[t][0]), mb(s[t][1]), "", True) for t in marks]
    out.append(
        (
            f"after {turns} turns",
            mb(s[turns][0]),
            mb(s[turns][1]),
            "<= 10 MB / <= 25 MB",
            s[turns][0] <= 10e6 and s[turns][1] <= 25e6,
        )
    )
    early = (s[10 + window][0] - s[10][0]) / window
    late = (s[turns][0] - s[turns - window][0]) / window
    ratio = late / early if early > 0 else float("inf")
    out.append(
        (
            f"checkpoint bytes per turn, last {window} turns / turns 10-{10 + window}",
            f"{late:.0f} / {early:.0f} B",
            f"{ratio:.2f}x",
            "<= 1.3x",
            ratio <= 1.3,
        )
    )
    return out


def mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def print_rows(server: str) -> None:
    print_table(("figure (through the API, 1 KB turns)", "checkpoint tables", "whole database", "target"), rows(server))


if __name__ == "__main__":
    from tests.support.postgres import postgres_server

    with postgres_server(durable=True) as server:
        print_rows(server)
