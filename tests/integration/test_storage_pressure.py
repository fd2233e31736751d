"""SQLite under pressure, for real: another process holding the write lock, and a full disk
(a small tmpfs mounted for the test)."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from domain.principals import Role
from entrypoints.container import create_container
from entrypoints.http.app import create_app
from tests.support.app import app_env
from tests.support.fake_ollama import fake_ollama


def test_a_write_behind_another_process_lock_waits_one_busy_timeout_not_two(tmp_path: Path) -> None:
    """Writes share one thread per file: a request queued behind another write that waits for
    the lock (the background maintenance, say) waited a whole timeout of its own after it."""
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none", DATABASE_BUSY_TIMEOUT="2")
    with TestClient(create_app(create_container(env))) as client:
        cid = client.post("/api/chat", json={"message": "hello"}).json()["conversation"]
        time.sleep(0.5)
        holder = sqlite3.connect(tmp_path / "db" / "sophos.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process's write transaction
        try:
            for method, path, body in (
                ("PATCH", f"/api/conversations/{cid}", {"title": "renamed"}),
                ("DELETE", f"/api/conversations/{cid}", None),
                ("POST", "/api/chat", {"message": "during the lock"}),
            ):
                started = time.monotonic()
                response = client.request(method, path, json=body)
                took = time.monotonic() - started
                assert response.status_code == 503, (path, response.text)
                assert "busy" in response.json()["error"]["message"], response.text
                assert took < 3.5, (method, took)  # one DATABASE_BUSY_TIMEOUT (2 s), not two or 5 s
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert client.patch(f"/api/conversations/{cid}", json={"title": "renamed"}).status_code == 200


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_readyz_reports_a_database_on_a_full_disk(tmp_path: Path, small_disk: Path) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none", DATABASE_PATH=str(small_disk / "sophos.db"))
    with TestClient(create_app(create_container(env))) as client:
        assert client.post("/api/chat", json={"message": "before"}).status_code == 200
        assert client.get("/api/readyz").json()["status"] == "ok"
        filler = small_disk / "filler"
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass  # the disk is full
        ready = client.get("/api/readyz")
        assert ready.status_code == 503, ready.text
        assert "the disk that holds it is full" in ready.json()["message"]
        filler.unlink()
        assert client.get("/api/readyz").status_code == 200
    shutil.rmtree(small_disk, ignore_errors=True)


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass  # the disk is full
    return filler


def test_a_users_token_reads_on_a_full_disk(tmp_path: Path, small_disk: Path) -> None:
    """Accepting a token records its last use, a write: the disk being full must not turn
    every request of every user into a 503."""
    env = app_env(
        tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none", DATABASE_PATH=str(small_disk / "sophos.db"), API_TOKEN="admin-token"
    )
    with TestClient(create_app(create_container(env))) as client:
        users = client.app.state.services.users()
        user = client.portal.call(users.add, "ann", Role.USER)
        token = {"Authorization": f"Bearer {client.portal.call(users.issue_token, user.id, '').token}"}
        filler = fill(small_disk)
        listed = client.get("/api/conversations", headers=token)  # its first use: a write is due
        assert listed.status_code == 200, listed.text
        filler.unlink()
    shutil.rmtree(small_disk, ignore_errors=True)


def status_within(client: TestClient, cid: str, seconds: float, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The conversation as the API shows it, once `done` holds (or as it is after `seconds`)."""
    deadline = time.monotonic() + seconds
    while True:
        got = client.get(f"/api/conversations/{cid}")
        assert got.status_code == 200, got.text
        conversation: dict[str, Any] = got.json()["conversation"]
        if done(conversation) or time.monotonic() > deadline:
            return conversation
        time.sleep(0.1)


def test_a_disk_that_fills_mid_run_ends_the_run_within_its_lease(tmp_path: Path, small_disk: Path) -> None:
    """The run's last checkpoint and its outcome both fail on the full disk: the store says
    `running` until space is back, but the API says the run failed (STORAGE_FAILURE, not
    saved yet) within its lease, and the outcome is written once there is room."""
    path = small_disk / "sophos.db"
    with fake_ollama([{"text": "first"}]) as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none", DATABASE_PATH=str(path), RUN_LEASE_SECONDS="3")
        with TestClient(create_app(create_container(env))) as client:
            cid = client.post("/api/chat", json={"message": "first"}).json()["conversation"]
            status_within(client, cid, 10, lambda c: c["status"] != "running")
            filled: list[Path] = []
            fake.add({"text": "long answer " * 300, "before": lambda: filled.append(fill(small_disk))})
            assert client.post("/api/chat", json={"message": "second " * 2000, "conversation": cid}).status_code == 200
            shown = status_within(client, cid, 3, lambda c: c["status"] != "running")
            assert shown["status"] == "failed", shown
            assert shown["error"]["code"] == "STORAGE_FAILURE" and "not saved yet" in shown["error"]["message"]
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
                assert db.execute("SELECT status FROM runs ORDER BY started_at DESC LIMIT 1").fetchone() == ("running",)
            filled[0].unlink()  # room again
            written = status_within(client, cid, 10, lambda c: "not saved" not in (c.get("error") or {}).get("message", "x"))
            assert written["status"] == "failed" and written["error"]["code"] == "STORAGE_FAILURE", written
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
                assert db.execute("SELECT status FROM runs ORDER BY started_at DESC LIMIT 1").fetchone() == ("failed",)
    shutil.rmtree(small_disk, ignore_errors=True)
