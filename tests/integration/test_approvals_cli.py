"""`sophos chat`, `sophos approve` and `sophos approvals` without a terminal, on the
database file (no server), with the ledger MCP server and a fake Ollama. The same commands
through a running server are in test_approvals.py."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_approvals import charges, pay
from tests.support.app import SOPHOS, app_env, config_dir, ledger_server_entry, process_env
from tests.support.fake_ollama import fake_ollama


@pytest.mark.slow
def test_chat_stops_with_code_7_and_approve_and_always_decide_on_the_database_file(tmp_path: Path) -> None:
    book = tmp_path / "ledger.jsonl"
    config_dir(tmp_path, {"ledger": ledger_server_entry(book)})
    with fake_ollama([pay(5), {"text": "paid"}]) as fake:
        env = process_env(app_env(tmp_path, fake.url, TOOL_APPROVAL="unsafe"))

        def sophos(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([SOPHOS, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)

        asked = sophos("chat", "pay 5")
        assert asked.returncode == 7, asked.stderr  # documented: waiting for approval
        assert re.search(r'\? ledger__charge \{"amount": 5\} waits for approval \(call \S+\)', asked.stderr)
        cid = re.search(r"conversation: (\S+)", asked.stderr).group(1)  # type: ignore[union-attr]
        assert f"sophos approve {cid}" in asked.stderr and charges(book) == []
        shown = json.loads(sophos("show", cid, "--json").stdout)
        assert shown["conversation"]["status"] == "waiting" and len(shown["pendingApprovals"]) == 1
        bad = sophos("approve", cid, "--edit-args", '{"amount": "five"}')
        assert bad.returncode == 2 and bad.stderr.startswith("error: BAD_REQUEST: ") and "Traceback" not in bad.stderr
        both = sophos("approve", cid, "--reject", "no", "--always")
        assert both.returncode == 2 and "at most one" in both.stderr

        always = sophos("approve", cid, "--always")
        assert always.returncode == 0, always.stderr
        assert "paid" in always.stdout and len(charges(book)) == 1
        listed = sophos("approvals", "list")
        assert listed.returncode == 0 and listed.stdout.startswith("ledger__charge\t")
        assert sophos("approvals", "revoke", "ledger__charge").returncode == 0
        assert json.loads(sophos("approvals", "list", "--json").stdout) == {"alwaysAllowed": []}
        unknown = sophos("approvals", "revoke", "ledger__charge")
        assert unknown.returncode == 3 and "NOT_FOUND: No always-allow rule" in unknown.stderr
    assert len(charges(book)) == 1
