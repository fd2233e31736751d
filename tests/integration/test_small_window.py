"""A small MODEL_CONTEXT (issue 35 items 2 and 3): it starts alone, and a system prompt and
tool definitions that crowd its budget are said at start-up and by `doctor`."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.support.app import SOPHOS, app_env, config_dir, ledger_server_entry, process_env
from tests.support.fake_ollama import fake_ollama
from tests.support.server import LiveServer

LONG_RULES = "Follow these rules. " * 300  # ~1,500 tokens by the estimate


def sophos(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SOPHOS, *args], env=process_env(env), cwd=cwd, capture_output=True, text=True, timeout=120)


def test_doctor_says_when_the_system_prompt_and_tools_do_not_fit_the_budget(tmp_path: Path) -> None:
    config_dir(tmp_path, {"ledger": ledger_server_entry(tmp_path / "l.jsonl")}, system=LONG_RULES)
    with fake_ollama() as fake:
        small = sophos(app_env(tmp_path, fake.url, MODEL_CONTEXT="1024"), tmp_path, "doctor")
        roomy = sophos(app_env(tmp_path, fake.url, MODEL_CONTEXT="8192"), tmp_path, "doctor")
    lines = small.stdout.splitlines()
    assert small.returncode == 1, small.stdout + small.stderr
    bad = next(i for i, line in enumerate(lines) if line.startswith("BAD  context  MODEL_CONTEXT 1024: "))
    assert "of 512 tokens" in lines[bad] and "every model call exceeds the budget" in lines[bad]
    assert lines[bad + 1].strip().startswith("fix: raise MODEL_CONTEXT")
    assert roomy.returncode == 0, roomy.stdout
    assert any(
        line.startswith("ok   context  MODEL_CONTEXT 8192: the system prompt and tools take ~")
        for line in roomy.stdout.splitlines()
    )


def test_serve_warns_once_at_start_up_and_starts_with_model_context_1024_alone(tmp_path: Path) -> None:
    config_dir(tmp_path, system=LONG_RULES)
    with fake_ollama() as fake:
        server = LiveServer(app_env(tmp_path, fake.url, TOOLS_BACKEND="none", MODEL_CONTEXT="1024"), tmp_path).start()
        try:
            for _ in range(100):
                if "of the prompt budget" in server.log.read_text():
                    break
                time.sleep(0.1)
        finally:
            server.stop()
    log = server.log.read_text()
    assert log.count("of the prompt budget (MODEL_CONTEXT - MODEL_RESERVE): every model call exceeds the budget") == 1, log
