"""The HTTP app on PostgreSQL: /api/readyz checks the database (a server that others
share), and a run waiting for its model holds no pooled connection."""

from __future__ import annotations

import time
from pathlib import Path

from starlette.testclient import TestClient

from entrypoints.container import create_container
from entrypoints.http.app import create_app
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama
from tests.support.server import free_port


def readyz(tmp_path: Path, url: str) -> tuple[int, dict[str, object]]:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none", DATABASE_URL=url, DATABASE_BUSY_TIMEOUT="1")
    with TestClient(create_app(create_container(env), manage_lifecycle=False)) as client:
        response = client.get("/api/readyz")
        return response.status_code, response.json()


def test_readyz_answers_503_while_the_database_is_unreachable(tmp_path: Path, pg_url: str) -> None:
    status, body = readyz(tmp_path, pg_url)
    assert status == 200 and body["status"] == "ok"
    status, body = readyz(tmp_path, f"postgresql://sophos:secret@127.0.0.1:{free_port()}/sophos")
    assert status == 503 and body["status"] == "error"
    assert str(body["message"]).startswith("Database not available: postgresql://sophos@127.0.0.1")
    assert "secret" not in str(body)


def test_a_long_model_call_holds_no_connection(tmp_path: Path, pg_url: str, ollama: FakeOllama) -> None:
    ollama.latency = 3.0  # the model thinks for 3 s before answering
    env = app_env(
        tmp_path, ollama.url, TOOLS_BACKEND="none", DATABASE_URL=pg_url, DATABASE_POOL_SIZE="1", DATABASE_BUSY_TIMEOUT="1"
    )
    with TestClient(create_app(create_container(env))) as client:
        cid = client.post("/api/chat", json={"message": "think hard"}).json()["conversation"]
        for _ in range(5):  # with its only connection held by the run, these would wait and fail
            started = time.monotonic()
            assert client.get(f"/api/conversations/{cid}").json()["activeRun"] is not None
            assert client.get("/api/conversations").status_code == 200
            assert time.monotonic() - started < 0.9
            time.sleep(0.2)


def test_search_on_postgresql_finds_titles_and_messages_of_finished_runs(tmp_path: Path, pg_url: str) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none", DATABASE_URL=pg_url)
    with TestClient(create_app(create_container(env))) as client:
        cid = client.post("/api/chat", json={"message": "Are <b>blue whales</b> loud?"}).json()["conversation"]
        deadline = time.monotonic() + 30
        while client.get(f"/api/conversations/{cid}").json()["conversation"]["status"] != "completed":
            assert time.monotonic() < deadline, "the run never completed"
            time.sleep(0.05)
        body = client.get("/api/search", params={"q": '"blue whales"'}).json()
        typed = client.get("/api/search", params={"q": '"blue wha'}).json()  # a phrase being typed
        bad = client.get("/api/search", params={"q": "bl*ue"})
    assert [(r["conversation"], r["messageIndex"], r["role"]) for r in body["results"]] == [
        (cid, None, "title"),
        (cid, 0, "user"),
        (cid, 1, "assistant"),  # the shortest first, then the oldest
    ]
    assert body["results"][1]["snippet"] == "Are &lt;b&gt;<mark>blue whales</mark>&lt;/b&gt; loud?"
    assert body["nextCursor"] is None
    assert typed["results"] == body["results"] and typed["unsearched"] == {"branches": 0, "conversations": 0}
    assert bad.status_code == 400 and bad.json()["error"] == {
        "code": "BAD_REQUEST",
        "message": "'*' may only end a word or a phrase",
    }
    assert not (tmp_path / "db").exists()  # nothing searched or written on SQLite


def test_requests_behind_another_sessions_lock_fail_after_the_busy_timeout(
    tmp_path: Path, pg_url: str, ollama: FakeOllama
) -> None:
    """A VACUUM FULL or a migration holding `runs` made POST, list and detail hang for good."""
    import psycopg

    env = app_env(tmp_path, ollama.url, TOOLS_BACKEND="none", DATABASE_URL=pg_url, DATABASE_BUSY_TIMEOUT="1")
    with TestClient(create_app(create_container(env))) as client:
        cid = client.post("/api/chat", json={"message": "before the lock"}).json()["conversation"]
        with psycopg.connect(pg_url) as holder:
            holder.execute("LOCK TABLE runs, conversations IN ACCESS EXCLUSIVE MODE")  # as VACUUM FULL takes it
            for method, path, body in (
                ("POST", "/api/chat", {"message": "during the lock"}),
                ("GET", "/api/conversations", None),
                ("GET", f"/api/conversations/{cid}", None),
            ):
                started = time.monotonic()
                response = client.request(method, path, json=body)
                took = time.monotonic() - started
                assert response.status_code == 503 and response.json()["error"]["code"] == "STORAGE_FAILURE", path
                assert took < 10, (path, took)
        assert client.get(f"/api/conversations/{cid}").status_code == 200  # the lock gone, all is well
