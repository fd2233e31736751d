"""The database file deleted under a running server, or damaged: refused clearly, never lost
silently, never a traceback."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import uuid
from pathlib import Path

import httpx

from adapters.sqlite.database import connect, migrate
from tests.support.app import SOPHOS, app_env, process_env
from tests.support.fake_ollama import fake_ollama
from tests.support.server import LiveServer, stream


def sophos(env: dict[str, str], cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SOPHOS, *args], env=process_env(env), cwd=cwd, capture_output=True, text=True, timeout=timeout)


def one_clean_line(run: subprocess.CompletedProcess[str]) -> str:
    """The one error line of a failed command (a server also logs the raw detail)."""
    assert run.returncode != 0, run.stdout
    assert "Traceback" not in run.stderr + run.stdout, run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip() and not re.match(r"\d{4}-\d\d-\d\d ", line)]
    assert len(lines) == 1 and lines[0].startswith("error: "), run.stderr
    return lines[0]


def test_a_database_deleted_under_a_running_server_refuses_writes_and_says_so(tmp_path: Path) -> None:
    with fake_ollama([{"text": "first"}, {"text": "lost?"}]) as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        db = Path(env["DATABASE_PATH"])
        server = LiveServer(env, tmp_path).start()
        try:
            cid = server.post("/api/chat", {"message": "hello"}).json()["conversation"]
            assert stream(server, cid)[-1][1] == "end"
            assert server.get("/api/readyz").status_code == 200
            os.unlink(db)

            ready = server.get("/api/readyz")
            assert ready.status_code == 503 and "deleted or replaced" in ready.json()["message"]
            for response in (
                server.post("/api/chat", {"message": "again", "conversation": cid}),
                server.post("/api/chat", {"message": "a new one"}),
                httpx.patch(server.url + f"/api/conversations/{cid}", json={"title": "renamed"}, timeout=30),
            ):
                assert response.status_code == 503, response.text
                assert response.json()["error"]["code"] == "STORAGE_FAILURE"
                assert "deleted or replaced" in response.json()["error"]["message"]
            assert server.get(f"/api/conversations/{cid}").status_code == 200  # reads still answer

            # a CLI on the same path does not silently start an empty database beside it
            line = one_clean_line(sophos(env, tmp_path, "conversations"))
            assert "missing but its -wal/-shm files remain" in line
            assert not db.exists()
            doctor = sophos(env, tmp_path, "doctor")
            assert doctor.returncode == 1 and "Traceback" not in doctor.stderr + doctor.stdout
            assert any(
                line.startswith("BAD  database") and "missing but its -wal/-shm files remain" in line
                for line in doctor.stdout.splitlines()
            ), doctor.stdout
        finally:
            server.stop()
    assert "Traceback" not in server.log.read_text()


def test_a_replaced_database_file_refuses_writes(tmp_path: Path) -> None:
    with fake_ollama([{"text": "first"}]) as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        db = Path(env["DATABASE_PATH"])
        server = LiveServer(env, tmp_path).start()
        try:
            cid = server.post("/api/chat", {"message": "hello"}).json()["conversation"]
            stream(server, cid)
            other = tmp_path / "other.db"
            migrate(connect(str(other)))
            os.replace(other, db)  # the path now names another file
            response = httpx.patch(server.url + f"/api/conversations/{cid}", json={"title": "renamed"}, timeout=30)
            assert response.status_code == 503 and response.json()["error"]["code"] == "STORAGE_FAILURE"
            assert server.get("/api/readyz").status_code == 503
        finally:
            server.stop()


def filled_database(tmp_path: Path) -> tuple[dict[str, str], Path]:
    env = app_env(tmp_path, TOOLS_BACKEND="none", MODEL_BACKEND="demo")
    db = Path(env["DATABASE_PATH"])
    conn = connect(str(db))
    migrate(conn)
    conn.execute("BEGIN")
    for i in range(2000):
        conn.execute(
            "INSERT INTO conversations (id, title, created_at, updated_at, message_count) VALUES (?, ?, ?, ?, 0)",
            (str(uuid.uuid4()), f"title {i} " + "x" * 200, "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z"),
        )
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return env, db


def damage(db: Path, offset: int, length: int) -> None:
    with db.open("r+b") as f:
        f.seek(offset)
        f.write(b"\xa5" * length)


def test_a_damaged_header_is_one_line_and_a_non_zero_exit_everywhere(tmp_path: Path) -> None:
    env, db = filled_database(tmp_path)
    damage(db, 0, 100)
    serve = sophos({**env, "PORT": "0"}, tmp_path, "serve", timeout=60)
    assert "listening" not in serve.stdout
    assert "damaged" in one_clean_line(serve)
    for args in (("conversations",), ("chat", "hi"), ("db", "stats")):
        assert "damaged" in one_clean_line(sophos(env, tmp_path, *args)), args
    doctor = sophos(env, tmp_path, "doctor")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr + doctor.stdout
    assert any(line.startswith("BAD  database") and "damaged" in line for line in doctor.stdout.splitlines()), doctor.stdout


def test_damage_inside_the_file_is_caught_at_start_up_and_by_doctor(tmp_path: Path) -> None:
    env, db = filled_database(tmp_path)
    page = sqlite3.connect(db).execute("PRAGMA page_size").fetchone()[0]
    damage(db, page * 20, page)  # a table page in the middle; the header is intact
    serve = sophos({**env, "PORT": "0"}, tmp_path, "serve", timeout=60)
    assert "listening" not in serve.stdout
    assert "damaged" in one_clean_line(serve)
    doctor = sophos(env, tmp_path, "doctor")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr
    assert any(line.startswith("BAD  database") and "damaged" in line for line in doctor.stdout.splitlines()), doctor.stdout
