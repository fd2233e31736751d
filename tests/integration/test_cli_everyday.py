"""Everyday use of the command line (issue 33): short ids, `last`, delete's question,
the grouped help, the CLI's own fixes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.support.app import SOPHOS, app_env, process_env
from tests.support.cli import sophos
from tests.support.server import LiveServer
from tests.support.terminal import Terminal

IDS = ["c959f4c6-0000-4000-8000-000000000001", "c959f4c6-1111-4000-8000-000000000002", "d00dfeed-0000-4000-8000-000000000003"]


def with_conversations(tmp_path: Path) -> dict[str, str]:
    """A database holding the three conversations of IDS, the last one the most recent."""
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    assert sophos(env, tmp_path, "conversations").returncode == 0  # creates the schema
    with sqlite3.connect(env["DATABASE_PATH"]) as db:
        for i, cid in enumerate(IDS):
            stamp = f"2026-01-0{i + 1}T10:00:00.000Z"
            db.execute(
                "INSERT INTO conversations (id, title, created_at, updated_at, message_count) VALUES (?, ?, ?, ?, 0)",
                (cid, f"title {i}", stamp, stamp),
            )
    return env


def test_a_unique_prefix_or_last_names_a_conversation_and_an_ambiguous_one_lists_the_candidates(tmp_path: Path) -> None:
    env = with_conversations(tmp_path)
    shown = sophos(env, tmp_path, "show", "D00DFEED", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["conversation"]["id"] == IDS[2]
    assert json.loads(sophos(env, tmp_path, "show", "c959f4c6-1", "--json").stdout)["conversation"]["id"] == IDS[1]
    assert json.loads(sophos(env, tmp_path, "show", "last", "--json").stdout)["conversation"]["id"] == IDS[2]

    ambiguous = sophos(env, tmp_path, "show", "c959")
    assert ambiguous.returncode == 2
    lines = ambiguous.stderr.splitlines()
    assert lines[0] == "error: AMBIGUOUS_ID: c959 names 2 conversations; give more of the id:"
    assert [line.split()[0] for line in lines[1:]] == [IDS[1], IDS[0]]  # newest first, with their titles
    assert "title 1" in lines[1]

    unknown = sophos(env, tmp_path, "rename", "abcd", "x")
    assert (unknown.returncode, unknown.stderr.strip()) == (3, "error: NOT_FOUND: no conversation id starts with abcd")
    too_short = sophos(env, tmp_path, "show", "c9")
    assert too_short.returncode == 2 and "a unique prefix of it (4 or more hex digits) or last" in too_short.stderr
    renamed = sophos(env, tmp_path, "rename", "d00d", "New name")
    assert renamed.stdout.strip() == f"renamed {IDS[2]}: New name"


def test_chat_continues_the_last_conversation_with_dash_dash_last(tmp_path: Path) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    first = sophos(env, tmp_path, "chat", "one")
    cid = first.stderr.split("conversation: ")[1].split()[0]
    again = sophos(env, tmp_path, "chat", "--last", "two")
    assert again.returncode == 0, again.stderr
    assert f"conversation: {cid}" in again.stderr
    third = sophos(env, tmp_path, "chat", "-c", cid[:8], "three")
    assert f"conversation: {cid}" in third.stderr
    assert json.loads(sophos(env, tmp_path, "show", cid[:6], "--json").stdout)["conversation"]["messageCount"] == 6


def test_prefixes_resolve_through_a_server_too(tmp_path: Path) -> None:
    env = with_conversations(tmp_path)
    server = LiveServer(env, tmp_path).start()
    try:
        renamed = sophos(env, tmp_path, "rename", "d00d", "Served", "--server", server.url)
        assert renamed.stdout.strip() == f"renamed {IDS[2]}: Served", renamed.stderr
        ambiguous = server.get("/api/conversations?idPrefix=C959")
        assert ambiguous.status_code == 200
        assert [c["id"] for c in ambiguous.json()["conversations"]] == [IDS[1], IDS[0]]
        assert server.get("/api/conversations?idPrefix=c9").status_code == 400
        assert server.get("/api/conversations?idPrefix=c959&limit=2").status_code == 400
        cancel = sophos(env, tmp_path, "cancel", "d00d", "--server", server.url)
        assert "NO_ACTIVE_RUN" in cancel.stderr  # resolved on the server, then refused there
        both = sophos(env, tmp_path, "rename", "c959", "x", "--server", server.url)
        assert both.returncode == 2 and IDS[0] in both.stderr and IDS[1] in both.stderr
    finally:
        server.stop()


def test_delete_asks_on_a_terminal_and_refuses_without_one(tmp_path: Path) -> None:
    env = with_conversations(tmp_path)
    piped = sophos(env, tmp_path, "delete", "d00d")
    assert piped.returncode == 2
    assert piped.stderr.strip() == "error: BAD_REQUEST: not deleting d00d without confirmation: add --yes"
    tty = Terminal([SOPHOS, "delete", "d00d"], process_env(env), tmp_path)
    try:
        tty.read_until(f'Delete "title 2" ({IDS[2]}, 0 messages)? [y/N]')
        tty.type("n\r")
        assert tty.wait() == 1
        assert "not deleted" in tty.output
    finally:
        tty.close()
    assert IDS[2] in sophos(env, tmp_path, "conversations").stdout
    tty = Terminal([SOPHOS, "delete", "d00d"], process_env(env), tmp_path)
    try:
        tty.read_until("[y/N]")
        tty.type("y\r")
        assert tty.wait() == 0
        assert f"deleted {IDS[2]}" in tty.output
    finally:
        tty.close()
    yes = sophos(env, tmp_path, "delete", "--yes", IDS[1][:10])
    assert (yes.returncode, yes.stdout.strip()) == (0, f"deleted {IDS[1]}")
    assert sophos(env, tmp_path, "conversations").stdout.split()[0] == IDS[0]


def test_the_jsonl_export_holds_every_user_message(tmp_path: Path) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    first = sophos(env, tmp_path, "chat", "first words")
    cid = first.stderr.split("conversation: ")[1].split()[0]
    sophos(env, tmp_path, "chat", "-c", cid, "second words")  # rides as pending input on the last checkpoint
    sophos(env, tmp_path, "chat", "-c", cid, "--edit", "2", "second, edited")  # a branch of its own
    sophos(env, tmp_path, "chat", "-c", cid, "third words")
    lines = [json.loads(x) for x in sophos(env, tmp_path, "export", cid, "--format", "jsonl").stdout.splitlines()]
    seen = [
        m["content"] for line in lines for m in [*line.get("added", []), line["last_message"] or {}] if m.get("role") == "user"
    ]
    assert seen == ["first words", "second words", "second, edited", "third words"]


def test_search_show_conversations_and_branch_take_dash_dash_server(tmp_path: Path) -> None:
    env = with_conversations(tmp_path)
    server = LiveServer(env, tmp_path).start()
    try:
        assert server.patch(f"/api/conversations/{IDS[2]}", {"title": "lighthouse keeper"}).status_code == 200
        found = sophos(env, tmp_path, "search", "lighthouse", "--json", "--server", server.url)
        assert found.returncode == 0, found.stderr
        assert [r["conversation"] for r in json.loads(found.stdout)["results"]] == [IDS[2]]
        listed = sophos(env, tmp_path, "conversations", "--json", "--server", server.url)
        assert [c["id"] for c in json.loads(listed.stdout)["conversations"]][0] == IDS[2]
        shown = sophos(env, tmp_path, "show", "d00d", "--json", "--server", server.url)
        assert json.loads(shown.stdout)["conversation"]["title"] == "lighthouse keeper"
        switched = sophos(env, tmp_path, "branch", "d00d", "2", "--server", server.url)
        assert switched.returncode == 2 and "BRANCH_NOT_FOUND" in switched.stderr  # refused by the server
    finally:
        server.stop()


def test_adding_a_taken_user_name_names_the_user_who_has_it(tmp_path: Path) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    assert sophos(env, tmp_path, "users", "add", "Ann", "--no-token").returncode == 0
    again = sophos(env, tmp_path, "users", "add", "ann")
    assert again.returncode == 4
    assert again.stderr.startswith("error: USER_EXISTS: A user named 'Ann' exists already (u_"), again.stderr
