"""Search through a real `sophos serve` on a real SQLite file: the API, and an index that
never drifts from the threads (a run killed mid-way, a resume, a delete, a reindex)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.sqlite.database import MIGRATIONS
from tests.support.app import app_env
from tests.support.cli import sophos
from tests.support.fake_ollama import fake_ollama
from tests.support.server import LiveServer


def wait_status(server: LiveServer, cid: str, want: set[str], timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        detail: dict[str, Any] = server.get(f"/api/conversations/{cid}").json()
        if detail["conversation"].get("status") in want:
            return detail
        time.sleep(0.1)
    raise AssertionError(f"{cid} never reached {want}")


def chat(server: LiveServer, message: str, cid: str | None = None) -> str:
    body = {"message": message, **({"conversation": cid} if cid else {})}
    r = server.post("/api/chat", body)
    assert r.status_code == 200, r.text
    started: str = r.json()["conversation"]
    wait_status(server, started, {"completed"})
    return started


def search(server: LiveServer, q: str, **params: Any) -> dict[str, Any]:
    r = server.get("/api/search", params={"q": q, **params})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def indexed(db: Path, cid: str) -> set[tuple[int | None, str, str]]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT message_index, role, body FROM search_entries WHERE conversation_id = ?", (cid,)).fetchall()
        # the FTS index agrees with its content table
        conn.execute("INSERT INTO search_fts (search_fts, rank) VALUES ('integrity-check', 1)")
        return {(i, role, body) for i, role, body in rows}
    finally:
        conn.close()


def expected(server: LiveServer, cid: str) -> set[tuple[int | None, str, str]]:
    """What the index must hold for a conversation: its title, and its user and assistant
    messages with text, at their index in the detail."""
    detail = server.get(f"/api/conversations/{cid}").json()
    out: set[tuple[int | None, str, str]] = {(None, "title", detail["conversation"]["title"])}
    for i, m in enumerate(detail["messages"]):
        if m["role"] in ("user", "assistant") and m["content"].strip():
            out.add((i, m["role"], m["content"]))
    return out


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server for the read-only API tests (each uses its own words)."""
    tmp_path = tmp_path_factory.mktemp("search")
    server = LiveServer(app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none"), tmp_path).start()
    yield server
    server.stop()


def test_search_finds_titles_and_messages_ranked_with_marked_snippets(demo_server: LiveServer) -> None:
    whales = chat(demo_server, "Tell me about blue whales <b>and</b> krill")
    chat(demo_server, "Whales again: humpback whales sing", whales)
    other = chat(demo_server, "Deploying the blue service to Kubernetes")
    body = search(demo_server, "whales")
    detail = demo_server.get(f"/api/conversations/{whales}").json()
    assert {r["conversation"] for r in body["results"]} == {whales} and body["nextCursor"] is None
    assert body["unsearched"] == {"branches": 0, "conversations": 0}
    for r in body["results"]:
        assert set(r) == {"conversation", "title", "messageIndex", "role", "snippet"}
        assert "<mark>whales</mark>" in r["snippet"].lower()
        if r["messageIndex"] is not None:  # the index the detail shows the message at
            message = detail["messages"][r["messageIndex"]]
            assert message["role"] == r["role"] and "whales" in message["content"].lower()
    assert body["results"][0]["snippet"].lower().count("<mark>whales</mark>") == 2  # the densest first
    assert any("&lt;b&gt;" in r["snippet"] for r in body["results"])  # text escaped, only <mark> is markup
    phrase = search(demo_server, '"blue whales"')["results"]
    assert {r["conversation"] for r in phrase} == {whales} and "<mark>blue whales</mark>" in phrase[0]["snippet"]
    prefix = search(demo_server, "kube*")["results"]
    assert {r["conversation"] for r in prefix} == {other} and "<mark>Kubernetes</mark>" in prefix[0]["snippet"]
    assert {r["conversation"] for r in search(demo_server, "blue")["results"]} == {whales, other}
    first = search(demo_server, "whales", limit=1)
    assert len(first["results"]) == 1 and first["nextCursor"]
    rest = search(demo_server, "whales", limit=50, before=first["nextCursor"])["results"]
    assert first["results"] + rest == body["results"]


@pytest.mark.parametrize(
    "params, message",
    [
        ({"q": "*"}, "'*' must follow a word"),
        ({"q": "wh*ales"}, "'*' may only end a word or a phrase"),
        ({"q": "NEAR(a b) OR c:d ^e"}, None),  # FTS5 syntax is just words here: no error, no 500
        ({"q": "  "}, "q is required"),
        ({}, "q is required"),
        ({"q": "!!! ???"}, "The query has no words to search for"),
        ({"q": "x", "limit": "0"}, "limit must be between 1 and 100"),
        ({"q": "x", "limit": "ten"}, "limit must be an integer"),
        ({"q": "x", "before": "-3"}, "Invalid cursor"),
        ({"q": "x", "before": "\u00b9"}, "Invalid cursor"),  # a superscript one: isdigit() says yes, int() no
        ({"q": "x", "page": "2"}, "Unknown parameter(s): page"),
        ({"q": "x" * 501}, "q is longer than 500 characters"),
    ],
)
def test_bad_queries_are_a_400_with_a_clear_message(demo_server: LiveServer, params: dict[str, str], message: str | None) -> None:
    r = demo_server.get("/api/search", params=params)
    if message is None:
        nothing = {"branches": 0, "conversations": 0}
        assert r.status_code == 200 and r.json() == {"results": [], "nextCursor": None, "unsearched": nothing}
        return
    assert r.status_code == 400 and r.json() == {"error": {"code": "BAD_REQUEST", "message": message}}


def test_rename_and_delete_change_what_is_found(demo_server: LiveServer) -> None:
    cid = chat(demo_server, "Notes on gannets")
    r = httpx.patch(f"{demo_server.url}/api/conversations/{cid}", json={"title": "Seabird diary"}, timeout=30)
    assert r.status_code == 200
    assert search(demo_server, "seabird")["results"][0]["title"] == "Seabird diary"
    assert [r["role"] for r in search(demo_server, "gannets")["results"]] == ["user", "assistant"]
    assert httpx.delete(f"{demo_server.url}/api/conversations/{cid}", timeout=30).status_code == 204
    assert search(demo_server, "gannets")["results"] == [] and search(demo_server, "seabird")["results"] == []


def test_the_index_never_drifts_from_the_threads(tmp_path: Path) -> None:
    """A run killed with SIGKILL mid-way, its resume, a delete and a reindex each leave
    the index holding exactly the stored threads' messages."""
    with fake_ollama() as ollama:
        env = app_env(tmp_path, ollama.url, TOOLS_BACKEND="none", AUTO_RESUME="false")
        db = Path(env["DATABASE_PATH"])
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
            assert indexed(db, kept) == expected(server, kept)
            # the unanswered message waits as pending input on the last checkpoint: a reindex keeps it
            done = sophos(env, tmp_path, "db", "reindex")
            assert done.returncode == 0 and done.stdout.strip() == "indexed 4 entries", done.stderr
            assert indexed(db, kept) == expected(server, kept)
            assert server.post("/api/chat", {"resume": True, "conversation": kept}).status_code == 200
            wait_status(server, kept, {"completed"})
            assert len(expected(server, kept)) == 5 and indexed(db, kept) == expected(server, kept)
            gone = chat(server, "A conversation about razorbills to delete")
            wanted = {c: expected(server, c) for c in (kept, gone)}
            assert indexed(db, gone) == wanted[gone]
            assert httpx.delete(f"{server.url}/api/conversations/{gone}", timeout=30).status_code == 204
            assert indexed(db, gone) == set()
        finally:
            server.stop()
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM search_entries")  # a damaged index, rebuilt by reindex
    conn.commit()
    conn.close()
    done = sophos(env, tmp_path, "db", "reindex")
    assert done.returncode == 0 and done.stdout.strip() == "indexed 5 entries", done.stderr
    assert indexed(db, kept) == wanted[kept] and indexed(db, gone) == set()


def wait_for(condition: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("condition never held")


def test_migration_indexes_conversations_stored_before_search_existed(tmp_path: Path) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    assert sophos(env, tmp_path, "chat", "Older talk about narwhals").returncode == 0
    conn = sqlite3.connect(env["DATABASE_PATH"])  # back to the schema before search (v4)
    for name in ("search_fts", "search_entries", "search_threads"):
        conn.execute(f"DROP TABLE {name}")
    for trigger in ("conversations_search_ai", "conversations_search_au", "conversations_search_ad"):
        conn.execute(f"DROP TRIGGER {trigger}")
    conn.execute("DROP TRIGGER conversations_branches_ad")  # and before branches (v6)
    conn.execute("DROP TABLE branches")
    conn.execute("ALTER TABLE checkpoint_log DROP COLUMN branch")
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()
    found = sophos(env, tmp_path, "search", "narwhals", "--json")
    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)["results"]
    assert {(r["messageIndex"], r["role"]) for r in results} == {(None, "title"), (0, "user"), (1, "assistant")}


def test_cli_search_prints_marked_matches_json_and_one_line_errors(tmp_path: Path) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    chat = sophos(env, tmp_path, "chat", "Where do <arctic> terns migrate?")
    assert chat.returncode == 0, chat.stderr
    cid = chat.stderr.split("conversation: ")[1].split()[0]
    text = sophos(env, tmp_path, "search", "tern*")
    assert text.returncode == 0 and text.stdout.count(cid) == 3, text.stdout
    assert "Where do <arctic> «terns» migrate?" in text.stdout and "#1 assistant" in text.stdout
    page = json.loads(sophos(env, tmp_path, "search", "terns", "--limit", "1", "--json").stdout)
    assert len(page["results"]) == 1 and page["nextCursor"] == "1"
    assert sophos(env, tmp_path, "search", "albatross").stdout == "No matches.\n"
    bad = sophos(env, tmp_path, "search", "ter*ns")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr == "error: BAD_REQUEST: '*' may only end a word or a phrase\n"


def test_a_search_says_how_many_inactive_branches_it_did_not_look_in(tmp_path: Path) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    chat = sophos(env, tmp_path, "chat", "Where do lighthouse keepers live?")
    cid = chat.stderr.split("conversation: ")[1].split()[0]
    assert json.loads(sophos(env, tmp_path, "search", "keeper", "--json").stdout)["unsearched"] == {
        "branches": 0,
        "conversations": 0,
    }
    assert sophos(env, tmp_path, "regenerate", cid).returncode == 0  # the first answer: an inactive branch
    page = json.loads(sophos(env, tmp_path, "search", "keeper", "--json").stdout)
    assert page["unsearched"] == {"branches": 1, "conversations": 1} and page["results"]
    text = sophos(env, tmp_path, "search", "lighthous").stdout
    assert text.endswith("(1 inactive branch of 1 conversation not searched; `sophos branch ID N` makes one active)\n")


OLD_INDEX = [  # the index before stems (migrations 5 to 18): the text alone
    "DROP TRIGGER search_entries_ai",
    "DROP TRIGGER search_entries_ad",
    "DROP TRIGGER search_entries_au",
    "DROP TRIGGER conversations_search_au",
    "DROP TABLE search_fts",
    "DROP INDEX search_entries_unstemmed",
    "ALTER TABLE search_entries DROP COLUMN stems",
    "CREATE VIRTUAL TABLE search_fts USING fts5(body, content='search_entries', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 2', prefix='2 3')",
    "CREATE TRIGGER search_entries_ai AFTER INSERT ON search_entries BEGIN "
    "INSERT INTO search_fts (rowid, body) VALUES (new.id, new.body); END",
    "CREATE TRIGGER search_entries_ad AFTER DELETE ON search_entries BEGIN "
    "INSERT INTO search_fts (search_fts, rowid, body) VALUES ('delete', old.id, old.body); END",
    "CREATE TRIGGER search_entries_au AFTER UPDATE OF body ON search_entries BEGIN "
    "INSERT INTO search_fts (search_fts, rowid, body) VALUES ('delete', old.id, old.body); "
    "INSERT INTO search_fts (rowid, body) VALUES (new.id, new.body); END",
    "CREATE TRIGGER conversations_search_au AFTER UPDATE OF title ON conversations BEGIN "
    "UPDATE search_entries SET body = new.title WHERE conversation_id = new.id AND message_index IS NULL; END",
    "INSERT INTO search_fts (search_fts) VALUES ('rebuild')",
    "PRAGMA user_version = 17",
]


def test_an_index_from_before_stems_finds_every_form_after_the_upgrade(tmp_path: Path) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    chat = sophos(env, tmp_path, "chat", "Who kept the lighthouses?")
    cid = chat.stderr.split("conversation: ")[1].split()[0]
    conn = sqlite3.connect(env["DATABASE_PATH"])
    for statement in OLD_INDEX:
        conn.execute(statement)
    conn.commit()
    conn.close()
    found = sophos(env, tmp_path, "search", "lighthouse who", "--json")  # "lighthouse": any form of the word
    assert found.returncode == 0, found.stderr
    assert {(r["conversation"], r["messageIndex"]) for r in json.loads(found.stdout)["results"]} >= {(cid, 0)}
    conn = sqlite3.connect(env["DATABASE_PATH"])
    with conn:  # a title written by another program: its trigger writes no stems, the next open does
        conn.execute(
            "INSERT INTO conversations (id, title, created_at, updated_at) VALUES "
            "('c0ffee00-0000-4000-8000-000000000000', 'Keepers of lights', '2026-01-01T00:00:00Z', "
            "'2026-01-01T00:00:00Z')"
        )
    conn.close()
    found = sophos(env, tmp_path, "search", "keeper light", "--json")
    assert [r["conversation"] for r in json.loads(found.stdout)["results"]] == ["c0ffee00-0000-4000-8000-000000000000"]
    assert indexed(Path(env["DATABASE_PATH"]), cid) == expected_offline(env, tmp_path, cid)
    conn = sqlite3.connect(env["DATABASE_PATH"])
    assert conn.execute("SELECT count(*) FROM search_entries WHERE stems IS NULL").fetchone() == (0,)
    assert conn.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)  # every migration since ran
    conn.close()


def expected_offline(env: dict[str, str], tmp_path: Path, cid: str) -> set[tuple[int | None, str, str]]:
    """expected(), read with `sophos show --json`."""
    shown = sophos(env, tmp_path, "show", cid, "--json")
    assert shown.returncode == 0, shown.stderr
    detail = json.loads(shown.stdout)
    out: set[tuple[int | None, str, str]] = {(None, "title", detail["conversation"]["title"])}
    for i, m in enumerate(detail["messages"]):
        if m["role"] in ("user", "assistant") and m["content"].strip():
            out.add((i, m["role"], m["content"]))
    return out
