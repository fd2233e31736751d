"""The `sophos` command at a terminal (a real pty), in a pipe, and under a real SIGINT."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.app import SOPHOS, app_env, config_dir, ledger_server_entry, process_env
from tests.support.fake_ollama import fake_ollama
from tests.support.server import LiveServer
from tests.support.terminal import Terminal


def sophos(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SOPHOS, *args], env=process_env(env), cwd=cwd, capture_output=True, text=True, timeout=120)


def test_a_closed_pipe_ends_the_command_quietly_and_records_the_run(tmp_path: Path) -> None:
    with fake_ollama([{"text": "row\n " * 400, "token_delay": 0.02}]) as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        err = tmp_path / "err.txt"
        piped = subprocess.run(
            ["bash", "-c", f'set -o pipefail; "{SOPHOS}" chat "list rows" 2>"{err}" | head -1'],
            env=process_env(env),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert piped.stdout == "row\n"
    assert piped.returncode == 141, err.read_text()  # as a tool killed by SIGPIPE, without dying of it
    assert err.read_text() == ""  # no traceback, no "Exception ignored", no report
    listed = json.loads(sophos(env, tmp_path, "conversations", "--json").stdout)["conversations"]
    assert [c["status"] for c in listed] == ["cancelled"]  # recorded now, not `interrupted` later
    shown = json.loads(sophos(env, tmp_path, "show", listed[0]["id"], "--json").stdout)
    assert shown["resumable"] is True


def test_ctrl_c_prints_a_resume_hint_with_the_options_the_run_needs(tmp_path: Path) -> None:
    env = app_env(tmp_path)  # Ollama on a dead port: the run needs `--model demo` to go on
    message = "word " * 80  # the demo model echoes it word by word, 50 ms each
    child = subprocess.Popen(
        [SOPHOS, "chat", message, "--model", "demo", "--tools", "demo"],
        env=process_env(env),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    child.stdout.read(40)  # the answer is streaming
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130 and "Traceback" not in err and "Aborted!" not in err
    cid = err.split("conversation: ")[1].split()[0]
    hint = f"Resume with: sophos resume {cid} --backend demo --tools demo"  # the backend flag as it is spelled now
    assert hint in err
    resumed = sophos(env, tmp_path, *hint.split("sophos ")[1].split())
    assert resumed.returncode == 0 and "word word" in resumed.stdout


@pytest.mark.slow
def test_a_terminal_gets_a_spinner_and_a_table_a_pipe_gets_neither(tmp_path: Path) -> None:
    config_dir(tmp_path, {"ledger": ledger_server_entry(tmp_path / "ledger.jsonl")})
    slow_tool = {"stall": 2, "tool_calls": [("ledger__append", {"label": "x", "delay": 2})]}
    with fake_ollama([slow_tool, {"stall": 2, "text": "late answer"}]) as fake:
        env = app_env(tmp_path, fake.url)
        tty = Terminal([SOPHOS, "chat", "think first"], process_env(env), tmp_path)
        try:
            tty.read_until("waiting for the model 1s")
            tty.read_until("→ ledger__append")
            tty.read_until("running ledger__append 1s")
            tty.read_until("← ledger__append")
            tty.read_until("waiting for the model 1s")
            tty.read_until("late answer")
            assert tty.wait() == 0
        finally:
            tty.close()
        fake.add({**slow_tool, "stall": 1}, {"stall": 1, "text": "late answer"})
        piped = sophos(env, tmp_path, "chat", "think again")
    assert piped.returncode == 0 and "late answer" in piped.stdout
    assert "waiting" not in piped.stderr and "running" not in piped.stderr and "\r" not in piped.stderr
    table = Terminal([SOPHOS, "conversations"], process_env(env), tmp_path)
    try:
        header = table.read_until("TITLE")
        assert header.split() == ["ID", "UPDATED", "MSGS", "STATUS", "TITLE"]
        assert "just now" in table.read_until("think first")
        table.wait()
    finally:
        table.close()
    plain = sophos(env, tmp_path, "conversations").stdout
    assert "TITLE" not in plain and "just now" not in plain and "Z     4 msgs" in plain


def test_the_prompt_loop_stops_an_answer_on_ctrl_c_and_leaves_on_ctrl_d(tmp_path: Path) -> None:
    with fake_ollama([{"text": "word " * 300, "token_delay": 0.05}, {"text": "second answer"}]) as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        repl = Terminal([SOPHOS, "repl"], process_env(env), tmp_path)
        try:
            repl.read_until("> ")
            repl.interrupt_at_prompt("> ")  # Ctrl-C at the prompt: a fresh prompt, not an exit
            repl.type("first question\n")
            repl.read_until("word word word")
            repl.type("\x03")  # Ctrl-C during the answer stops the answer
            repl.read_until("(stopped; the next message continues from here)")
            repl.read_until("> ")
            repl.type("second question\n")
            repl.read_until("second answer")
            repl.read_until("> ")
            repl.type("\x04")  # Ctrl-D leaves
            assert repl.wait() == 0
        finally:
            repl.close()
    assert "Traceback" not in repl.output
    cid = repl.output.split("conversation: ")[1].split()[0]
    shown = json.loads(sophos(env, tmp_path, "show", cid, "--json").stdout)
    users = [m["content"] for m in shown["messages"] if m["role"] == "user"]
    assert users == ["first question", "second question"]
    assert shown["messages"][-1]["content"] == "second answer" and shown["conversation"]["status"] == "completed"


@pytest.mark.parametrize("where", ["local", "server"])
def test_a_line_typed_while_the_repl_answers_is_queued_and_answered_next(tmp_path: Path, where: str) -> None:
    with (
        fake_ollama([{"text": "word " * 120, "token_delay": 0.05}, {"text": "queued answer"}, {"text": "third answer"}]) as fake,
        contextlib.ExitStack() as stack,
    ):
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        args = [SOPHOS, "repl"]
        if where == "server":
            server = LiveServer(env, tmp_path).start()
            stack.callback(server.stop)
            args += ["--server", server.url]
        repl = Terminal(args, process_env(env), tmp_path)
        try:
            repl.read_until("> ")
            repl.type("first question\n")
            repl.read_until("word word word")
            repl.type("typed during the answer\n")
            repl.read_until("queued (")  # acknowledged while the first answer is still written
            assert "queued answer" not in repl.output
            repl.read_until("» next queued message")
            repl.read_until("queued answer")
            repl.read_until("> ")
            repl.type("third question\n")
            repl.read_until("third answer")
            repl.read_until("> ")
            repl.type("\x04")
            assert repl.wait() == 0
        finally:
            repl.close()
    assert "Traceback" not in repl.output
    cid = repl.output.split("conversation: ")[1].split()[0]
    shown = json.loads(sophos(env, tmp_path, "show", cid, "--json").stdout)
    said = [(m["role"], m["content"].strip()) for m in shown["messages"]]
    assert said == [
        ("user", "first question"),
        ("assistant", ("word " * 120).strip()),
        ("user", "typed during the answer"),
        ("assistant", "queued answer"),
        ("user", "third question"),
        ("assistant", "third answer"),
    ], said
