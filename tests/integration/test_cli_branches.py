"""Edit, regenerate, show and switch branches with the `sophos` command, on a real file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_branches import Answers
from tests.support.app import app_env
from tests.support.cli import sophos
from tests.support.fake_ollama import fake_ollama
from tests.support.server import LiveServer


@pytest.mark.slow
def test_edit_regenerate_show_and_branch_from_the_command_line(tmp_path: Path) -> None:
    with fake_ollama() as fake:
        fake.responder = Answers()
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        first = sophos(env, tmp_path, "chat", "apricot one")
        cid = first.stderr.split("conversation: ")[1].split()[0]
        assert sophos(env, tmp_path, "chat", "-c", cid, "apricot two").returncode == 0
        edited = sophos(env, tmp_path, "chat", "-c", cid, "--edit", "2", "apricot two, edited")
        assert edited.returncode == 0, edited.stderr
        assert "answer 3 to apricot two, edited" in edited.stdout
        again = sophos(env, tmp_path, "regenerate", cid)
        assert again.returncode == 0 and "answer 4 to apricot two, edited" in again.stdout

        shown = sophos(env, tmp_path, "show", cid).stdout
        assert f"{cid} · 4 messages · completed · branch 3 of 3" in shown
        assert "[2 user] ‹2/2› branches 1 2\napricot two, edited" in shown
        assert "[3 assistant · qwen3] ‹2/2› branches 2 3\nanswer 4 to apricot two, edited" in shown  # the model that wrote it
        detail = json.loads(sophos(env, tmp_path, "show", cid, "--json").stdout)
        assert detail["activeBranch"] == 3 and detail["messages"][2]["branch"] == {"index": 2, "count": 2, "branches": [1, 2]}

        switched = sophos(env, tmp_path, "branch", cid, "1")
        assert switched.returncode == 0 and switched.stdout.strip() == f"{cid}: branch 1 of 3 · 4 messages"
        assert "apricot two\n" in sophos(env, tmp_path, "show", cid).stdout
        listed = json.loads(sophos(env, tmp_path, "conversations", "--json").stdout)["conversations"]
        assert listed[0]["messageCount"] == 4

        for args, line, code in (
            (("chat", "-c", cid, "--edit", "1", "x"), "error: INVALID_EDIT: editOf 1 is not a user message", 2),
            (
                ("chat", "--edit", "0", "x"),
                "error: BAD_REQUEST: --edit needs the conversation: sophos chat -c ID --edit N MESSAGE",
                2,
            ),
            (("branch", cid, "9"), "error: BRANCH_NOT_FOUND: Branch 9 does not exist", 2),
        ):
            r = sophos(env, tmp_path, *args)
            assert (r.returncode, r.stderr.strip()) == (code, line) and "Traceback" not in r.stderr


def test_edit_and_regenerate_through_a_running_server(tmp_path: Path) -> None:
    with fake_ollama() as fake:
        fake.responder = Answers()
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        server = LiveServer(env, tmp_path).start()
        try:
            first = sophos(env, tmp_path, "chat", "cherry", "--server", server.url)
            cid = first.stderr.split("conversation: ")[1].split()[0]
            edited = sophos(env, tmp_path, "chat", "-c", cid, "--edit", "0", "cherry, edited", "--server", server.url)
            assert edited.returncode == 0 and "answer 2 to cherry, edited" in edited.stdout, edited.stderr
            again = sophos(env, tmp_path, "regenerate", cid, "--server", server.url)
            assert again.returncode == 0 and "answer 3 to cherry, edited" in again.stdout, again.stderr
            bad = sophos(env, tmp_path, "chat", "-c", cid, "--edit", "1", "x", "--server", server.url)
            assert (bad.returncode, bad.stderr.strip()) == (2, "error: INVALID_EDIT: editOf 1 is not a user message")
            detail = server.get(f"/api/conversations/{cid}").json()
            assert detail["activeBranch"] == 3 and detail["messages"][0]["branch"]["count"] == 2
        finally:
            server.stop()
