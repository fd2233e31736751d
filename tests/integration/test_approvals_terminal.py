"""`sophos chat` and `sophos repl` on a real pseudo-terminal ask about each tool call that waits
for approval, then continue the run: the ledger MCP server (a destructive `charge` that records
every execution) counts what ran."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.app import SOPHOS, app_env, config_dir, ledger_server_entry, process_env
from tests.support.fake_ollama import FakeOllama, fake_ollama
from tests.support.server import LiveServer
from tests.support.terminal import Terminal

QUESTION = "[a]pprove / [e]dit / [r]eject / [A]lways"


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The model: a charge of the number in the user's message, then says what happened."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return {"text": f"done: {last['content'][:200]}"}
    amounts = re.findall(r"\d+", last["content"])
    return {"tool_calls": [("ledger__charge", {"amount": int(amounts[0])})]} if amounts else {"text": "hello"}


@dataclass
class Setup:
    env: dict[str, str]
    tmp: Path
    fake: FakeOllama

    def charges(self, amount: int) -> list[dict[str, Any]]:
        """Executions of `charge-<amount>` in the ledger (each test uses its own amounts)."""
        book = self.tmp / "ledger.jsonl"
        lines = [json.loads(x) for x in book.read_text().splitlines()] if book.exists() else []
        return [e for e in lines if e["event"] == "start" and e["label"] == f"charge-{amount}"]

    def terminal(self, *args: str, **env: str) -> Terminal:
        return Terminal([SOPHOS, *args], process_env({**self.env, **env}), self.tmp)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("asking")
    config_dir(tmp, {"ledger": ledger_server_entry(tmp / "ledger.jsonl")})
    with fake_ollama() as fake:
        fake.responder = answer
        yield Setup(app_env(tmp, fake.url, TOOL_APPROVAL="unsafe"), tmp, fake)


def test_approving_at_the_terminal_runs_the_call_once_and_streams_the_rest(setup: Setup) -> None:
    tty = setup.terminal("chat", "pay 21")
    try:
        shown = tty.read_until(QUESTION)
        assert "ledger__charge" in shown and "destructive" in shown and setup.charges(21) == []
        tty.type("a\n")
        tty.read_until("done: charged 21")
        assert tty.wait() == 0
    finally:
        tty.close()
    assert len(setup.charges(21)) == 1


def test_rejecting_at_the_terminal_runs_nothing_and_the_model_gets_the_reason(setup: Setup) -> None:
    tty = setup.terminal("chat", "pay 22")
    try:
        tty.read_until(QUESTION)
        tty.type("r\n")
        tty.read_until("reason")
        tty.type("not from this account\n")
        tty.read_until("not from this account")
        assert tty.wait() == 0
    finally:
        tty.close()
    assert setup.charges(22) == []
    told = [m["content"] for r in setup.fake.requests for m in r["messages"] if m["role"] == "tool"]
    assert any("not from this account" in t for t in told)


def test_editing_at_the_terminal_opens_the_editor_and_runs_the_edited_arguments(setup: Setup) -> None:
    editor = setup.tmp / "editor.py"  # what a person does in $EDITOR: 23 becomes 230
    editor.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        "p = sys.argv[1]\nargs = json.load(open(p))\nargs['amount'] *= 10\njson.dump(args, open(p, 'w'))\n"
    )
    editor.chmod(0o755)
    tty = setup.terminal("chat", "pay 23", EDITOR=str(editor))
    try:
        tty.read_until(QUESTION)
        tty.type("e\n")
        tty.read_until("charged 230")
        assert tty.wait() == 0
    finally:
        tty.close()
    assert setup.charges(23) == [] and len(setup.charges(230)) == 1


def test_the_repl_asks_too_and_always_remembers_the_tool(setup: Setup) -> None:
    tty = setup.terminal("repl")
    try:
        tty.read_until("> ")
        tty.type("pay 24\n")
        tty.read_until(QUESTION)
        tty.type("A\n")
        tty.read_until("done: charged 24")
        tty.read_until("> ")
        tty.type("pay 25\n")  # always allowed now: no question
        tty.read_until("done: charged 25")
        tty.read_until("> ")
        tty.type("\x04")  # Ctrl-D leaves
        assert tty.wait() == 0
        assert QUESTION not in tty.output.split("pay 25", 1)[1]
    finally:
        tty.close()
    assert len(setup.charges(24)) == 1 and len(setup.charges(25)) == 1
    listed = subprocess.run(
        [SOPHOS, "approvals", "list"], env=process_env(setup.env), cwd=setup.tmp, capture_output=True, text=True, timeout=60
    )
    assert "ledger__charge" in listed.stdout
    # forget it again, for the other tests of this module
    subprocess.run(
        [SOPHOS, "approvals", "revoke", "ledger__charge"],
        env=process_env(setup.env),
        cwd=setup.tmp,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def test_a_client_of_a_running_server_asks_the_same_way_and_rejects_a_bad_edit_before_running(setup: Setup) -> None:
    editor = setup.tmp / "bad-editor.py"  # the first edit breaks the schema, the second fixes it
    editor.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "p = sys.argv[1]\nargs = json.load(open(p))\n"
        "args['amount'] = 'many' if not os.path.exists(os.environ['MARK']) else 270\n"
        "open(os.environ['MARK'], 'w').close()\njson.dump(args, open(p, 'w'))\n"
    )
    editor.chmod(0o755)
    server = LiveServer(setup.env, setup.tmp).start()
    tty = setup.terminal("chat", "pay 27", "--server", server.url, EDITOR=str(editor), MARK=str(setup.tmp / "edited-once"))
    try:
        tty.read_until(QUESTION)
        tty.type("e\n")
        tty.read_until('is not of type "integer"')
        tty.read_until(QUESTION)  # asked again, nothing ran
        assert setup.charges(27) == []
        tty.type("e\n")
        tty.read_until("charged 270")
        assert tty.wait() == 0
    finally:
        tty.close()
        server.stop()
    assert setup.charges(27) == [] and len(setup.charges(270)) == 1


def test_without_a_terminal_chat_prints_the_waiting_call_and_exits_7(setup: Setup) -> None:
    piped = subprocess.run(
        [SOPHOS, "chat", "pay 26"],
        env=process_env(setup.env),
        cwd=setup.tmp,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert piped.returncode == 7, piped.stderr
    assert "waits for approval" in piped.stderr and QUESTION not in piped.stderr
    assert setup.charges(26) == []


def test_saving_the_arguments_unchanged_is_not_an_edit_and_visual_is_the_fallback_editor(setup: Setup) -> None:
    editor = setup.tmp / "resaver.py"  # saves the same JSON, re-indented: the file changed, the arguments did not
    editor.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        "p = sys.argv[1]\nargs = json.load(open(p))\njson.dump(args, open(p, 'w'), indent=8)\n"
    )
    editor.chmod(0o755)
    tty = setup.terminal("chat", "pay 26", EDITOR="", VISUAL=str(editor))
    try:
        tty.read_until(QUESTION)
        tty.type("e\n")
        tty.read_until("the arguments were not changed; choose again")
        tty.read_until(QUESTION)
        tty.type("a\n")
        tty.read_until("done: charged 26")
        assert tty.wait() == 0
    finally:
        tty.close()
    assert len(setup.charges(26)) == 1
    told = [m["content"] for r in setup.fake.requests for m in r["messages"] if m["role"] == "tool"]
    assert not any("edited" in t for t in told if "26" in t)  # approved as it was, not "the user edited"
