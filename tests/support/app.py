"""Environment for a real Sophos (container, CLI or server) on files under tmp_path."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SOPHOS = str(Path(sys.executable).parent / "sophos")


def ledger_server_entry(ledger: Path) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": ["-m", "tests.support.ledger_server", str(ledger)],
        "env": {"PYTHONPATH": f"{ROOT}:{ROOT / 'src'}"},
    }


def config_dir(tmp_path: Path, servers: dict[str, Any] | None = None, system: str = "You are a test.") -> Path:
    d = tmp_path / "config"
    d.mkdir(exist_ok=True)
    (d / "system.md").write_text(system)
    (d / "mcp.json").write_text(json.dumps(servers or {}))
    return d


def app_env(tmp_path: Path, ollama_url: str = "http://127.0.0.1:9", **extra: Any) -> dict[str, str]:
    """Variables for a process (or container) fully isolated under tmp_path."""
    cfg = tmp_path / "config"
    if not cfg.exists():
        config_dir(tmp_path)
    env = {
        "DATABASE_PATH": str(tmp_path / "db" / "sophos.db"),
        "CONFIG_DIR": str(cfg),
        "MEMORY_FILE_PATH": str(tmp_path / "memory" / "memory.jsonl"),
        "MODEL_BACKEND": "ollama",
        "TOOLS_BACKEND": "mcp",
        "OLLAMA_HOST": ollama_url,
        "OLLAMA_MODEL": "qwen3",
        "MODEL_TIMEOUT": "10",
        # the host name Starlette's TestClient and schemathesis send; real servers use 127.0.0.1
        "ALLOWED_HOSTS": "testserver",
        # tests of other features call the ledger's destructive tools without asking;
        # tests of approvals (test_approvals.py) set TOOL_APPROVAL themselves
        "TOOL_APPROVAL": "off",
        # a test's server stops in seconds even with a run still going (the default waits
        # 30 s for it); the tests of the drain set their own
        "SHUTDOWN_TIMEOUT": "3",
        # a title the model writes is one more request to the fake model after a first
        # answer, which would take a scripted reply meant for a run; the tests of titles
        # (test_titles.py) set AUTO_TITLE themselves
        "AUTO_TITLE": "false",
    }
    env.update({k: str(v) for k, v in extra.items()})
    return env


def process_env(env: dict[str, str]) -> dict[str, str]:
    full = dict(os.environ)
    # off unless a test asks for it: servers of parallel tests would all want port 2024
    full["LANGGRAPH_API_PORT"] = "0"
    full.update(env)
    full["PYTHONPATH"] = f"{ROOT}:{ROOT / 'src'}"
    return full
