"""Settings: `config/defaults.yaml` (or built-in defaults), overridden by the environment.
An empty environment variable counts as unset, as in the reference."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

DEFAULTS: dict[str, Any] = {
    "DATABASE_PATH": "data/db/sophos.db",
    "CONFIG_DIR": "config",
    "MEMORY_FILE_PATH": "data/memory/memory.jsonl",
    "MODEL_BACKEND": "ollama",
    "TOOLS_BACKEND": "mcp",
    "OLLAMA_HOST": "http://localhost:11434",
    "OLLAMA_MODEL": "qwen3",
    "OLLAMA_THINK": "false",
    "OPENAI_BASE_URL": "http://localhost:8080/v1",
    "OPENAI_MODEL": "local-model",
    "OPENAI_API_KEY": "",
    "MODEL_TIMEOUT": 120,
    "AGENT_RECURSION_LIMIT": 25,
    "RUN_LEASE_SECONDS": 30,
    "HOST": "127.0.0.1",
    "PORT": 8000,
    "SHUTDOWN_TIMEOUT": 30,
    "API_TOKEN": "",
    "ALLOWED_HOSTS": "",
    "LOG_LEVEL": "INFO",
    "SSE_PING_SECONDS": 15,
    "AUTO_RESUME": "false",
    "CHECKPOINT_KEEP": 3,
    "RUN_EVENT_RETENTION_SECONDS": 300,
    "DATABASE_BUSY_TIMEOUT": 5,
    "MCP_START_TIMEOUT": 30,
    "REQUEST_TIMEOUT": 10,
    "MAX_CONNECTIONS": 100,
}

INTS = {"CHECKPOINT_KEEP", "MODEL_TIMEOUT", "AGENT_RECURSION_LIMIT", "PORT", "SHUTDOWN_TIMEOUT", "MAX_CONNECTIONS"}
FLOATS = {"SSE_PING_SECONDS", "RUN_LEASE_SECONDS", "RUN_EVENT_RETENTION_SECONDS", "DATABASE_BUSY_TIMEOUT",
          "MCP_START_TIMEOUT", "REQUEST_TIMEOUT"}


class SettingsError(ValueError):
    """Raised when a setting has a value that cannot be used."""


def load_settings(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    env = os.environ if env is None else env
    settings = dict(DEFAULTS)
    config_dir = env.get("CONFIG_DIR") or DEFAULTS["CONFIG_DIR"]
    settings["CONFIG_DIR"] = config_dir
    defaults_file = Path(config_dir) / "defaults.yaml"
    if defaults_file.is_file():
        try:
            loaded = yaml.safe_load(defaults_file.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as e:
            raise SettingsError(f"{defaults_file}: not valid YAML ({e})") from e
        if not isinstance(loaded, dict):
            raise SettingsError(f"{defaults_file}: must map setting names to values")
        settings.update({k: v for k, v in loaded.items() if k in DEFAULTS and v is not None})
    for key in DEFAULTS:
        value = env.get(key)
        if value:
            settings[key] = value
    for key in INTS:
        try:
            settings[key] = int(settings[key])
        except (TypeError, ValueError):
            if key == "AGENT_RECURSION_LIMIT":
                settings[key] = 25  # the reference's rule: invalid means the default
                continue
            raise SettingsError(f"{key} must be a whole number, got {settings[key]!r}") from None
    for key in FLOATS:
        try:
            settings[key] = float(settings[key])
        except (TypeError, ValueError):
            raise SettingsError(f"{key} must be a number, got {settings[key]!r}") from None
    if settings["AGENT_RECURSION_LIMIT"] <= 0:
        settings["AGENT_RECURSION_LIMIT"] = 25  # the reference's rule: invalid means default
    for key in ("OLLAMA_THINK", "AUTO_RESUME"):
        settings[key] = str(settings[key]).lower() == "true"
    for key in ("MODEL_BACKEND", "TOOLS_BACKEND"):
        settings[key] = str(settings[key]).lower()
    if settings["MODEL_BACKEND"] not in ("ollama", "openai", "demo"):
        raise SettingsError(f"MODEL_BACKEND must be ollama, openai or demo, got {settings['MODEL_BACKEND']!r}")
    if settings["TOOLS_BACKEND"] not in ("mcp", "demo", "none"):
        raise SettingsError(f"TOOLS_BACKEND must be mcp, demo or none, got {settings['TOOLS_BACKEND']!r}")
    return settings
