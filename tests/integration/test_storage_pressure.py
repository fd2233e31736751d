"""SQLite under pressure, for real: another process holding the write lock, and a full disk
(a small tmpfs mounted for the test)."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from domain.principals import Role
from entrypoints.container import create_container
from entrypoints.http.app import create_app
from tests.support.app import app_env


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
            for method, path, body in (("PATCH", f"/api/conversations/{cid}", {"title": "renamed"}),
                                       ("DELETE", f"/api/conversations/{cid}", None),
                                       ("POST", "/api/chat", {"message": "during the lock"})):
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
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none", DATABASE_PATH=str(small_disk / "sophos.db"),
                  API_TOKEN="admin-token")
    with TestClient(create_app(create_container(env))) as client:
        users = client.app.state.services.users()
        user = client.portal.call(users.add, "ann", Role.USER)
        token = {"Authorization": f"Bearer {client.portal.call(users.issue_token, user.id, '').token}"}
        filler = fill(small_disk)
        listed = client.get("/api/conversations", headers=token)  # its first use: a write is due
        assert listed.status_code == 200, listed.text
        filler.unlink()
    shutil.rmtree(small_disk, ignore_errors=True)
