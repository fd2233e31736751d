"""`sophos repl` on a real pseudo-terminal: line editing and history through readline, a
history file, \"\"\" for several lines, slash commands that never reach the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.app import SOPHOS, app_env, process_env
from tests.support.cli import sophos
from tests.support.terminal import Terminal

LEFT, UP = "\x1b[D", "\x1b[A"


def users(env: dict[str, str], cwd: Path, cid: str) -> list[str]:
    result = sophos(env, cwd, "show", cid, "--json")
    assert result.returncode == 0, (cid, result.stderr)
    shown: dict[str, Any] = json.loads(result.stdout)
    return [m["content"] for m in shown["messages"] if m["role"] == "user"]


def test_line_editing_history_multi_line_and_slash_commands(tmp_path: Path) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    tty = Terminal([SOPHOS, "repl"], process_env(env), tmp_path)
    try:
        banner = tty.read_until("> ")
        assert "sophos repl · a new conversation · /help lists the commands · Ctrl-D leaves" in banner
        tty.type("/help\r")
        shown = tty.read_until("> ")
        for name in ("/new", "/show", "/export", "/retry", "/bye", '"""'):
            assert name in shown
        tty.type("/frobnicate now\r")
        assert "unknown command /frobnicate: /help lists the commands" in tty.read_until("> ")
        tty.type(f"helo{LEFT}{LEFT}l\r")  # the arrow keys move the cursor; they are not sent
        tty.read_until('You wrote: "hello"')
        tty.read_until("> ")
        tty.type('"""first line\r')
        tty.read_until("… ")
        tty.type("second line\r")
        tty.read_until("… ")
        tty.type('last line"""\r')
        tty.read_until("last line")
        tty.read_until("> ")
        tty.type(f"{UP}{UP}{UP}{UP}\r")  # back past the block's three lines: "hello" again
        tty.read_until('You wrote: "hello"')
        tty.read_until("> ")
        tty.type("//etc is a directory\r")  # a message that starts with /
        tty.read_until('You wrote: "/etc is a directory"')
        tty.read_until("> ")
        tty.type("/retry\r")
        tty.read_until('You wrote: "/etc is a directory"')
        tty.read_until("> ")
        tty.type("/show\r")
        assert "branch 2 of 2" in tty.read_until("> ")
        tty.type("/export\r")
        assert "wrote " in tty.read_until("> ")
        tty.type("/bye\r")
        assert tty.wait() == 0
    finally:
        tty.close()
    assert "Traceback" not in tty.output
    cid = tty.output.split("\nconversation: ")[1].split()[0]
    assert users(env, tmp_path, cid) == ["hello", "first line\nsecond line\nlast line", "hello", "/etc is a directory"]
    [exported] = list(tmp_path.glob("hello-*.json"))
    assert len(json.loads(exported.read_text())["conversation"]["branches"]) == 2
    history = tmp_path / "db" / "repl_history"
    assert history.stat().st_mode & 0o777 == 0o600
    assert "/frobnicate now" in history.read_text()

    again = Terminal([SOPHOS, "repl", "--last"], process_env(env), tmp_path)  # the history survives the session
    try:
        assert f"conversation {cid[:8]} (hello)" in again.read_until("> ")
        again.type(f"{UP}\r")  # the last line of the previous session: /bye
        assert again.wait() == 0
    finally:
        again.close()
    assert f"continue with: sophos repl -c {cid}" in again.output


def test_new_starts_another_conversation_and_a_prefix_continues_one(tmp_path: Path) -> None:
    env = app_env(tmp_path, MODEL_BACKEND="demo", TOOLS_BACKEND="none")
    first = sophos(env, tmp_path, "chat", "one")
    cid = first.stderr.split("conversation: ")[1].split()[0]
    tty = Terminal([SOPHOS, "repl", "-c", cid[:6]], process_env(env), tmp_path)
    try:
        tty.read_until("> ")
        tty.type("two\r")
        tty.read_until('You wrote: "two"')
        tty.read_until("> ")
        tty.type("/new\r")
        tty.read_until("> ")
        tty.type("three\r")
        tty.read_until('You wrote: "three"')
        tty.read_until("> ")
        tty.type("\x04")
        assert tty.wait() == 0
    finally:
        tty.close()
    other = tty.output.split("\nconversation: ")[1].split()[0]
    assert other != cid
    assert users(env, tmp_path, cid) == ["one", "two"] and users(env, tmp_path, other) == ["three"]


def test_model_and_system_slash_commands_reach_the_model_server(tmp_path: Path) -> None:
    from tests.support.fake_ollama import fake_ollama

    with fake_ollama(models=("qwen3:latest", "llama3.2:latest")) as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        tty = Terminal([SOPHOS, "repl"], process_env(env), tmp_path)
        try:
            tty.read_until("> ")
            tty.type("/model\r")  # alone: the current one and the server's list
            listed = tty.read_until("> ")
            assert "model: qwen3" in listed and "llama3.2:latest" in listed
            tty.type("/model llama3.2\r")  # before the first message: kept for it
            assert "next message starts: llama3.2" in tty.read_until("> ")
            tty.type("hello\r")
            tty.read_until("> ")
            assert fake.requests[-1]["model"] == "llama3.2"
            tty.type("/system Answer in French.\r")  # on the conversation, from its next turn
            assert "system from the next turn on: Answer in French." in tty.read_until("> ")
            tty.type("/model mistral\r")  # unknown: one line with the fix, nothing changes
            assert "`ollama pull mistral`" in tty.read_until("> ")
            tty.type("again\r")
            tty.read_until("> ")
            last = fake.requests[-1]
            assert (last["model"], last["messages"][0]["content"]) == ("llama3.2", "You are a test.\n\nAnswer in French.")
            tty.type("/model default\r")
            assert "model from the next turn on: the default" in tty.read_until("> ")
            tty.type("once more\r")
            tty.read_until("> ")
            assert fake.requests[-1]["model"] == "qwen3"
            tty.type("/bye\r")
            assert tty.wait() == 0
        finally:
            tty.close()
    assert "Traceback" not in tty.output
