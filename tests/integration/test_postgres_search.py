"""Search through a real `sophos serve` on PostgreSQL: found as on SQLite, and an index
that never drifts from the threads (a run killed mid-way, its resume, a delete, a reindex,
conversations stored before the index existed)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import psycopg

from tests.integration.test_search import chat, expected, search, sophos, wait_for, wait_status
from tests.support.app import app_env
from tests.support.fake_ollama import FakeOllama
from tests.support.server import LiveServer


def indexed(url: str, cid: str) -> set[tuple[int | None, str, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT message_index, role, body FROM search_entries WHERE conversation_id = %s", (cid,)).fetchall()
        # every entry is found by its own words: the tsvector agrees with the text
        unfound = conn.execute(
            "SELECT count(*) FROM search_entries WHERE conversation_id = %s AND words = ''::tsvector", (cid,)
        ).fetchone()
    assert unfound == (0,)
    return {(i, role, body) for i, role, body in rows}


def test_the_index_on_postgresql_never_drifts_from_the_threads(tmp_path: Path, pg_url: str, ollama: FakeOllama) -> None:
    """A run killed with SIGKILL mid-way, its resume, a delete and a reindex each leave
    the index holding exactly the stored threads' messages, and search finds them."""
    env = app_env(tmp_path, ollama.url, TOOLS_BACKEND="none", AUTO_RESUME="false", DATABASE_URL=pg_url)
    server = LiveServer(env, tmp_path).start()
    try:
        kept = chat(server, "Puffins nest on cliffs")
        ollama.latency = 30.0  # the next run is still waiting for the model when it is killed
        r = server.post("/api/chat", {"message": "Second thoughts about razorbills", "conversation": kept})
        assert r.status_code == 200
        wait_for(lambda: len(server.get(f"/api/conversations/{kept}").json()["messages"]) == 3)
        server.kill()
    finally:
        server.stop()
    ollama.latency = 0.0
    server = LiveServer(env, tmp_path).start()
    try:
        detail = wait_status(server, kept, {"interrupted", "failed"})
        assert [m["role"] for m in detail["messages"]] == ["user", "assistant", "user"]
        assert indexed(pg_url, kept) == expected(server, kept)
        # the unanswered message waits as pending input on the last checkpoint: a reindex keeps it
        done = sophos(env, tmp_path, "db", "reindex")
        assert done.returncode == 0 and done.stdout.strip() == "indexed 4 entries", done.stderr
        assert indexed(pg_url, kept) == expected(server, kept)
        assert server.post("/api/chat", {"resume": True, "conversation": kept}).status_code == 200
        wait_status(server, kept, {"completed"})
        assert len(expected(server, kept)) == 5 and indexed(pg_url, kept) == expected(server, kept)
        found = search(server, "razorbill*")["results"]
        assert [(r["conversation"], r["messageIndex"]) for r in found] == [(kept, 2)]
        assert found[0]["snippet"] == "Second thoughts about <mark>razorbills</mark>"
        gone = chat(server, "A conversation about razorbills to delete")
        wanted = {c: expected(server, c) for c in (kept, gone)}
        assert indexed(pg_url, gone) == wanted[gone]
        assert httpx.delete(f"{server.url}/api/conversations/{gone}", timeout=30).status_code == 204
        assert indexed(pg_url, gone) == set()
        assert {r["conversation"] for r in search(server, "razorbills")["results"]} == {kept}
    finally:
        server.stop()
    with psycopg.connect(pg_url) as conn:
        conn.execute("DELETE FROM search_entries WHERE message_index IS NOT NULL")  # a damaged index
    done = sophos(env, tmp_path, "db", "reindex")
    assert done.returncode == 0 and done.stdout.strip() == "indexed 5 entries", done.stderr
    assert indexed(pg_url, kept) == wanted[kept] and indexed(pg_url, gone) == set()
    assert not (tmp_path / "db").exists()  # nothing went to a SQLite file


def test_conversations_stored_before_the_index_existed_are_found_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none", DATABASE_URL=pg_url)
    made = sophos(env, tmp_path, "chat", "Older talk about narwhals")
    assert made.returncode == 0, made.stderr
    with psycopg.connect(pg_url) as conn:  # as a database written before the search index existed
        conn.execute("DELETE FROM search_entries")
        conn.execute("DELETE FROM search_threads")
    found = sophos(env, tmp_path, "search", "narwhal*", "--json")
    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)["results"]
    assert {(r["messageIndex"], r["role"]) for r in results} == {(None, "title"), (0, "user"), (1, "assistant")}
    again = sophos(env, tmp_path, "search", "narwhals")  # indexed once: no duplicates
    assert again.returncode == 0 and again.stdout.count("«narwhals»") == 3, again.stdout
    bad = sophos(env, tmp_path, "search", "wh*ales")
    assert bad.returncode == 2 and bad.stderr == "error: BAD_REQUEST: '*' may only end a word or a phrase\n"


def test_a_search_through_huge_repetitive_messages_never_holds_up_the_server(
    tmp_path: Path, pg_url: str, ollama: FakeOllama
) -> None:
    """Snippets were quadratic in an entry's matches and built on the event loop: three
    32,000-character messages of "a " made `q=a b` take 38 s, and every probe and stream
    of the process waited as long."""
    import threading
    import time

    env = app_env(tmp_path, ollama.url, TOOLS_BACKEND="none", DATABASE_URL=pg_url)
    server = LiveServer(env, tmp_path).start()
    try:
        cid = chat(server, "a " * 15_999 + "b")
        for _ in range(2):
            chat(server, "a " * 15_999 + "b", cid)
        found: list[dict[str, object]] = []
        searching = threading.Thread(target=lambda: found.append(search(server, "a b")))
        searching.start()
        probes = []
        while searching.is_alive() or not probes:
            began = time.monotonic()
            assert server.get("/api/healthz").status_code == 200
            probes.append(time.monotonic() - began)
        searching.join()
        assert max(probes) < 2.0, probes  # was as long as the search: 38 s
        snippets = [r["snippet"] for r in found[0]["results"]]  # type: ignore[union-attr]
        assert len(snippets) == 3 and all(s.startswith("<mark>a</mark> <mark>a</mark>") for s in snippets)
    finally:
        server.stop()
