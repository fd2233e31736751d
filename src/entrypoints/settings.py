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
    "MODEL_TRANSPORT": "auto",
    "MODEL_CONTEXT": 8192,
    "MODEL_RESERVE": 1024,
    "MODEL_MAX_TOKENS": 8192,
    "CONTEXT_SUMMARY": "false",
    "CONTEXT_TOOL_SHARE": 0.25,
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
    "DATABASE_URL": "",
    "DATABASE_POOL_SIZE": 10,
    "MCP_START_TIMEOUT": 30,
    "TOOL_TIMEOUT": 120,
    "TOOL_APPROVAL": "unsafe",
    "APPROVAL_TIMEOUT": 0,
    "REQUEST_TIMEOUT": 10,
    "MAX_CONNECTIONS": 100,
}

INTS = {
    "DATABASE_POOL_SIZE", "CHECKPOINT_KEEP", "MODEL_TIMEOUT", "MODEL_CONTEXT", "MODEL_RESERVE", "MODEL_MAX_TOKENS",
    "AGENT_RECURSION_LIMIT", "PORT", "SHUTDOWN_TIMEOUT", "MAX_CONNECTIONS",
}
FLOATS = {
    "CONTEXT_TOOL_SHARE", "SSE_PING_SECONDS", "RUN_LEASE_SECONDS", "RUN_EVENT_RETENTION_SECONDS",
    "DATABASE_BUSY_TIMEOUT", "MCP_START_TIMEOUT", "TOOL_TIMEOUT", "REQUEST_TIMEOUT", "APPROVAL_TIMEOUT",
}


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
    if not 1 <= settings["MODEL_MAX_TOKENS"] <= MAX_ANSWER_TOKENS:
        raise SettingsError(f"MODEL_MAX_TOKENS must be between 1 and {MAX_ANSWER_TOKENS} tokens, got {settings['MODEL_MAX_TOKENS']}")
    if settings["AGENT_RECURSION_LIMIT"] <= 0:
        settings["AGENT_RECURSION_LIMIT"] = 25  # the reference's rule: invalid means default
    _check_context(settings)
    for key in ("OLLAMA_THINK", "AUTO_RESUME", "CONTEXT_SUMMARY"):
        settings[key] = str(settings[key]).lower() == "true"
    for key in ("MODEL_BACKEND", "TOOLS_BACKEND", "MODEL_TRANSPORT"):
        settings[key] = str(settings[key]).lower()
    if settings["MODEL_BACKEND"] not in ("ollama", "openai", "demo"):
        raise SettingsError(f"MODEL_BACKEND must be ollama, openai or demo, got {settings['MODEL_BACKEND']!r}")
    if settings["MODEL_TRANSPORT"] not in ("auto", "fast", "httpx"):
        raise SettingsError(f"MODEL_TRANSPORT must be auto, fast or httpx, got {settings['MODEL_TRANSPORT']!r}")
    if settings["TOOLS_BACKEND"] not in ("mcp", "demo", "none"):
        raise SettingsError(f"TOOLS_BACKEND must be mcp, demo or none, got {settings['TOOLS_BACKEND']!r}")
    settings["TOOL_APPROVAL"] = str(settings["TOOL_APPROVAL"]).strip().lower()
    if settings["TOOL_APPROVAL"] not in ("off", "unsafe", "all"):
        raise SettingsError(f"TOOL_APPROVAL must be off, unsafe or all, got {settings['TOOL_APPROVAL']!r}")
    if not 0 < settings["TOOL_TIMEOUT"] <= MAX_TOOL_TIMEOUT:
        raise SettingsError(f"TOOL_TIMEOUT must be a number of seconds above 0, at most {MAX_TOOL_TIMEOUT}")
    if settings["APPROVAL_TIMEOUT"] < 0:
        raise SettingsError("APPROVAL_TIMEOUT must be 0 (off) or a number of seconds")
    url = str(settings["DATABASE_URL"])
    if url and not url.startswith(("postgresql://", "postgres://")):
        raise SettingsError(f"DATABASE_URL must be a postgresql:// URL, got {database_label(settings)!r}")
    if settings["DATABASE_POOL_SIZE"] < 1:
        raise SettingsError("DATABASE_POOL_SIZE must be at least 1")
    # not a setting of its own: DATABASE_URL selects PostgreSQL for everything
    settings["STORAGE_BACKEND"] = "postgres" if url else "sqlite"
    return settings


MIN_CONTEXT = 512
# the widest window local models serve; LangChain holds every streamed chunk of an answer
# until it ends (~2.3 KiB a token), so this also bounds what one answer can cost (~300 MiB)
MAX_ANSWER_TOKENS = 131_072
MAX_TOOL_TIMEOUT = 86_400


def _check_context(settings: dict[str, Any]) -> None:
    window, reserve, share = settings["MODEL_CONTEXT"], settings["MODEL_RESERVE"], settings["CONTEXT_TOOL_SHARE"]
    if window < MIN_CONTEXT:
        raise SettingsError(f"MODEL_CONTEXT must be at least {MIN_CONTEXT} tokens, got {window}")
    if not 0 <= reserve <= window // 2:
        raise SettingsError(f"MODEL_RESERVE must be between 0 and half of MODEL_CONTEXT ({window // 2}), got {reserve}")
    if not 0.05 <= share <= 1:
        raise SettingsError(f"CONTEXT_TOOL_SHARE must be between 0.05 and 1, got {share}")


def database_label(settings: Mapping[str, Any]) -> str:
    """Where the data lives, for people: the file, or the PostgreSQL URL without password."""
    url = str(settings.get("DATABASE_URL") or "")
    if not url:
        return str(settings["DATABASE_PATH"])
    scheme, _, rest = url.partition("://")
    credentials, at, where = rest.rpartition("@")
    user = credentials.partition(":")[0]
    return f"{scheme}://{user}{at}{where}"
