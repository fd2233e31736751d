"""Settings: `config/defaults.yaml` (or built-in defaults), overridden by the environment.
An empty environment variable counts as unset, as in the reference."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from domain.attachments import (
    ATTACHMENT_BYTES_CEILING,
    ATTACHMENTS_CEILING,
    MAX_ATTACHMENT_BYTES,
    MAX_ATTACHMENTS,
    MAX_IMAGE_PIXELS,
    PIXELS_CEILING,
    AttachmentLimits,
    attachment_types,
    size_text,
)
from domain.errors import InvalidInput
from domain.principals import TrustedProxies


@dataclass(frozen=True)
class Settings:
    """Every setting, typed, with its default: the one place defaults are written
    (config/defaults.yaml documents them, a test keeps the two alike). The names are
    the environment variables'."""

    DATABASE_PATH: str = "data/db/sophos.db"
    CONFIG_DIR: str = "config"
    MEMORY_FILE_PATH: str = "data/memory/memory.jsonl"
    MODEL_BACKEND: str = "ollama"
    TOOLS_BACKEND: str = "mcp"
    OLLAMA_HOST: str = "http://localhost:11434"
    OLLAMA_MODEL: str = "qwen3"
    OLLAMA_THINK: str = "auto"  # auto (where /api/show lists `thinking`) | true | false
    OPENAI_BASE_URL: str = "http://localhost:8080/v1"
    OPENAI_MODEL: str = "local-model"
    OPENAI_API_KEY: str = ""
    MODEL_TIMEOUT: int = 120
    MODEL_TRANSPORT: str = "auto"  # auto | fast | httpx
    MODEL_TOOL_CHOICE: str = ""  # auto | required | none; unset: not sent (docs/model.md)
    MODEL_CONTEXT: int = 8192
    MODEL_RESERVE: int = 1024  # unset in the environment: at most half of MODEL_CONTEXT
    MODEL_MAX_TOKENS: int = 0  # the longest answer (tokens); 0: half of MODEL_CONTEXT, at least MODEL_RESERVE (answer_limit)
    CONTEXT_SUMMARY: bool = False
    CONTEXT_TOOL_SHARE: float = 0.25
    AGENT_RECURSION_LIMIT: int = 25
    RUN_LEASE_SECONDS: float = 30
    HOST: str = "127.0.0.1"
    PORT: int = 8000
    SHUTDOWN_TIMEOUT: int = 30
    API_TOKEN: str = ""
    SESSION_SECONDS: float = 30 * 24 * 3600  # a login's fixed lifetime (seconds)
    AUTH: str = "token"  # token (API_TOKEN, users' tokens) | proxy (also a trusted proxy's user header)
    TRUSTED_PROXY_IPS: str = ""  # the proxies whose X-Forwarded-For/-Proto (and AUTH=proxy user header) are believed
    PROXY_USER_HEADER: str = "Remote-User"  # AUTH=proxy: the header naming the user
    PROXY_AUTO_CREATE: bool = True  # AUTH=proxy: a user first seen is created with role `user` (false: refused)
    ADMIN_SEES_ALL: bool = False  # admins reach every user's conversations
    USER_MAX_ACTIVE_RUNS: int = 0  # a user's active runs + queued messages at most; 0 = no limit
    ALLOWED_HOSTS: str = ""
    LOG_LEVEL: str = "INFO"
    SSE_PING_SECONDS: float = 15
    AUTO_RESUME: bool = False
    CHECKPOINT_KEEP: int = 3
    RUN_EVENT_RETENTION_SECONDS: float = 300
    DATABASE_BUSY_TIMEOUT: float = 5
    DATABASE_URL: str = ""
    STORAGE_BACKEND: str = ""  # sqlite, postgres or memory; unset: postgres when DATABASE_URL is set
    DATABASE_POOL_SIZE: int = 10
    MCP_START_TIMEOUT: float = 30
    TOOL_TIMEOUT: float = 120
    TOOL_APPROVAL: str = "unsafe"
    APPROVAL_TIMEOUT: float = 0
    REQUEST_TIMEOUT: float = 10
    MAX_CONNECTIONS: int = 100
    LANGGRAPH_API_PORT: int = 2024  # LangGraph's Agent Server API beside the main one; 0 = off
    LANGGRAPH_API_CORS_ORIGINS: str = ""  # browser origins allowed to call it (comma-separated, or *)
    LANGGRAPH_JSON: str = ""  # a langgraph.json whose graphs `sophos serve` loads at start-up (adapters.graphs)
    MAX_QUEUED: int = 20
    MAX_ATTACHMENT_BYTES: int = MAX_ATTACHMENT_BYTES  # one attached file at most (bytes)
    MAX_ATTACHMENTS: int = MAX_ATTACHMENTS  # files one message may carry; 0 = attachments off
    ATTACHMENT_TYPES: str = "text,image,pdf"  # kinds or media types a message may carry (domain.attachments)
    MAX_IMAGE_PIXELS: int = MAX_IMAGE_PIXELS  # an attached image's declared width x height at most
    PDF_TIMEOUT: float = 20  # seconds one PDF's text may take to read (its worker process is killed then)
    PDF_MEMORY: int = 512 * 1024 * 1024  # bytes of memory a PDF's worker process may use
    PDF_WORKERS: int = 2  # PDFs read at once, each in a worker process of its own

    @property
    def answer_limit(self) -> int:
        """The longest answer, in tokens: MODEL_MAX_TOKENS, or by default half the window, and
        never less than the room the context budget keeps for it (MODEL_RESERVE). A model in a
        loop stops there instead of filling the server's window (issue 35: 6,332 tokens, 290 s),
        while a thinking model (its thinking counts) or a long program still has room: the
        reserve alone (1,024 by default) would cut both."""
        return self.MODEL_MAX_TOKENS or max(self.MODEL_RESERVE, self.MODEL_CONTEXT // 2)

    @property
    def attachment_limits(self) -> AttachmentLimits:
        """What a message may carry, as every edge checks it."""
        return AttachmentLimits(self.MAX_ATTACHMENT_BYTES, self.MAX_ATTACHMENTS, attachment_types(self.ATTACHMENT_TYPES),
                                self.MAX_IMAGE_PIXELS)

    @property
    def storage_backend(self) -> str:
        """sqlite, postgres or memory: STORAGE_BACKEND as load_settings resolved it."""
        return self.STORAGE_BACKEND or ("postgres" if self.DATABASE_URL else "sqlite")


DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(Settings)}
BOOLS = {f.name for f in fields(Settings) if f.type == "bool"}
INTS = {f.name for f in fields(Settings) if f.type == "int"}
FLOATS = {f.name for f in fields(Settings) if f.type == "float"}
STRINGS = {f.name for f in fields(Settings) if f.type == "str"}


class SettingsError(ValueError):
    """Raised when a setting has a value that cannot be used."""


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """The settings from `config/defaults.yaml` and the environment (`env`, or the process's);
    SettingsError names the first value that cannot be used."""
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
        # CONFIG_DIR is listed there for completeness: where the file is cannot come from it
        settings.update({k: v for k, v in loaded.items() if k in DEFAULTS and k != "CONFIG_DIR" and v is not None})
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
    if not 0 <= settings["MODEL_MAX_TOKENS"] <= MAX_ANSWER_TOKENS:
        raise SettingsError(
            f"MODEL_MAX_TOKENS must be between 1 and {MAX_ANSWER_TOKENS} tokens (0: MODEL_RESERVE), got {settings['MODEL_MAX_TOKENS']}"
        )
    if settings["AGENT_RECURSION_LIMIT"] <= 0:
        settings["AGENT_RECURSION_LIMIT"] = 25  # the reference's rule: invalid means default
    if not env.get("MODEL_RESERVE"):
        # a default reserve that a small window cannot hold shrinks to fit: MODEL_CONTEXT=1024
        # alone must start (one set by hand over half the window is still an error)
        settings["MODEL_RESERVE"] = min(settings["MODEL_RESERVE"], settings["MODEL_CONTEXT"] // 2)
    _check_context(settings)
    for key in BOOLS:
        settings[key] = str(settings[key]).lower() == "true"
    for key in ("MODEL_BACKEND", "TOOLS_BACKEND", "MODEL_TRANSPORT", "OLLAMA_THINK"):
        settings[key] = str(settings[key]).strip().lower()
    if settings["OLLAMA_THINK"] not in ("auto", "true", "false"):
        raise SettingsError(f"OLLAMA_THINK must be auto, true or false, got {settings['OLLAMA_THINK']!r}")
    if settings["MODEL_BACKEND"] not in ("ollama", "openai", "demo"):
        raise SettingsError(f"MODEL_BACKEND must be ollama, openai or demo, got {settings['MODEL_BACKEND']!r}")
    settings["MODEL_TOOL_CHOICE"] = str(settings["MODEL_TOOL_CHOICE"]).strip().lower()
    if settings["MODEL_TOOL_CHOICE"] not in TOOL_CHOICES:
        raise SettingsError(f"MODEL_TOOL_CHOICE must be auto, required or none (or unset), got {settings['MODEL_TOOL_CHOICE']!r}")
    if settings["MODEL_TRANSPORT"] not in ("auto", "fast", "httpx"):
        raise SettingsError(f"MODEL_TRANSPORT must be auto, fast or httpx, got {settings['MODEL_TRANSPORT']!r}")
    if settings["TOOLS_BACKEND"] not in ("mcp", "demo", "none"):
        raise SettingsError(f"TOOLS_BACKEND must be mcp, demo or none, got {settings['TOOLS_BACKEND']!r}")
    settings["TOOL_APPROVAL"] = str(settings["TOOL_APPROVAL"]).strip().lower()
    if settings["TOOL_APPROVAL"] not in ("off", "unsafe", "all"):
        raise SettingsError(f"TOOL_APPROVAL must be off, unsafe or all, got {settings['TOOL_APPROVAL']!r}")
    if not 0 < settings["TOOL_TIMEOUT"] <= MAX_TOOL_TIMEOUT:
        raise SettingsError(f"TOOL_TIMEOUT must be a number of seconds above 0, at most {MAX_TOOL_TIMEOUT}")
    if not 1 <= settings["SESSION_SECONDS"] <= MAX_SESSION_SECONDS:
        raise SettingsError(f"SESSION_SECONDS must be between 1 and {MAX_SESSION_SECONDS} (400 days)")
    if not 1 <= settings["MAX_QUEUED"] <= 1000:
        raise SettingsError(f"MAX_QUEUED must be between 1 and 1000, got {settings['MAX_QUEUED']}")
    if not 1 <= settings["MAX_ATTACHMENT_BYTES"] <= ATTACHMENT_BYTES_CEILING:
        raise SettingsError(f"MAX_ATTACHMENT_BYTES must be between 1 and {ATTACHMENT_BYTES_CEILING} "
                            f"({size_text(ATTACHMENT_BYTES_CEILING)}), got {settings['MAX_ATTACHMENT_BYTES']}")
    if not 0 <= settings["MAX_ATTACHMENTS"] <= ATTACHMENTS_CEILING:
        raise SettingsError(f"MAX_ATTACHMENTS must be between 0 (off) and {ATTACHMENTS_CEILING}, got {settings['MAX_ATTACHMENTS']}")
    try:
        attachment_types(str(settings["ATTACHMENT_TYPES"]))
    except ValueError as e:
        raise SettingsError(f"ATTACHMENT_TYPES: {e}") from None
    _check_files(settings)
    settings["AUTH"] = str(settings["AUTH"]).strip().lower()
    if settings["AUTH"] not in ("token", "proxy"):
        raise SettingsError(f"AUTH must be token or proxy, got {settings['AUTH']!r}")
    if settings["AUTH"] == "proxy" and not str(settings["TRUSTED_PROXY_IPS"]).strip():
        raise SettingsError("AUTH=proxy needs TRUSTED_PROXY_IPS (the proxies' addresses)")
    try:
        TrustedProxies(str(settings["TRUSTED_PROXY_IPS"]))
    except InvalidInput as e:
        raise SettingsError(e.message) from None
    if settings["AUTH"] == "proxy":
        if not str(settings["PROXY_USER_HEADER"]).strip():
            raise SettingsError("PROXY_USER_HEADER must name a header (e.g. Remote-User)")
    if settings["USER_MAX_ACTIVE_RUNS"] < 0:
        raise SettingsError("USER_MAX_ACTIVE_RUNS must be 0 (no limit) or a number of runs")
    if settings["APPROVAL_TIMEOUT"] < 0:
        raise SettingsError("APPROVAL_TIMEOUT must be 0 (off) or a number of seconds")
    url = str(settings["DATABASE_URL"])
    if url and not url.startswith(("postgresql://", "postgres://")):
        raise SettingsError(f"DATABASE_URL must be a postgresql:// URL, got {database_label(settings)!r}")
    if not 0 <= settings["LANGGRAPH_API_PORT"] <= 65535:
        raise SettingsError("LANGGRAPH_API_PORT must be a port (1-65535) or 0 (off)")
    if settings["DATABASE_POOL_SIZE"] < 1:
        raise SettingsError("DATABASE_POOL_SIZE must be at least 1")
    # unset keeps what configurations meant before the setting existed: a URL means PostgreSQL
    backend = str(settings["STORAGE_BACKEND"]).strip().lower() or ("postgres" if url else "sqlite")
    if backend not in ("sqlite", "postgres", "memory"):
        raise SettingsError(f"STORAGE_BACKEND must be sqlite, postgres or memory, got {settings['STORAGE_BACKEND']!r}")
    if backend == "postgres" and not url:
        raise SettingsError("STORAGE_BACKEND=postgres needs DATABASE_URL (a postgresql:// URL)")
    settings["STORAGE_BACKEND"] = str(settings["STORAGE_BACKEND"]).strip().lower()  # "": see storage_backend
    for key in STRINGS:
        settings[key] = str(settings[key])  # YAML reads `model: 7` as a number
    return Settings(**settings)


MIN_CONTEXT = 512
TOOL_CHOICES = ("", "auto", "required", "none")
# the widest window local models serve; LangChain holds every streamed chunk of an answer
# until it ends (~2.3 KiB a token), so this also bounds what one answer can cost (~300 MiB)
MAX_ANSWER_TOKENS = 131_072
MAX_TOOL_TIMEOUT = 86_400
MAX_SESSION_SECONDS = 400 * 86_400  # browsers cap a cookie's Max-Age at 400 days


def _check_context(settings: dict[str, Any]) -> None:
    window, reserve, share = settings["MODEL_CONTEXT"], settings["MODEL_RESERVE"], settings["CONTEXT_TOOL_SHARE"]
    if window < MIN_CONTEXT:
        raise SettingsError(f"MODEL_CONTEXT must be at least {MIN_CONTEXT} tokens, got {window}")
    if not 0 <= reserve <= window // 2:
        raise SettingsError(f"MODEL_RESERVE must be between 0 and half of MODEL_CONTEXT ({window // 2}), got {reserve}")
    if not 0.05 <= share <= 1:
        raise SettingsError(f"CONTEXT_TOOL_SHARE must be between 0.05 and 1, got {share}")


MIN_PDF_MEMORY = 128 * 1024 * 1024  # pypdf alone takes ~45 MB of address space
MAX_PDF_WORKERS = 64
MAX_PDF_TIMEOUT = 3600


def _check_files(settings: dict[str, Any]) -> None:
    if not 1 <= settings["MAX_IMAGE_PIXELS"] <= PIXELS_CEILING:
        raise SettingsError(f"MAX_IMAGE_PIXELS must be between 1 and {PIXELS_CEILING:,}, got {settings['MAX_IMAGE_PIXELS']}")
    if not 0 < settings["PDF_TIMEOUT"] <= MAX_PDF_TIMEOUT:
        raise SettingsError(f"PDF_TIMEOUT must be a number of seconds above 0, at most {MAX_PDF_TIMEOUT}")
    if settings["PDF_MEMORY"] < MIN_PDF_MEMORY:
        raise SettingsError(f"PDF_MEMORY must be at least {MIN_PDF_MEMORY} bytes (128 MB), got {settings['PDF_MEMORY']}")
    if not 1 <= settings["PDF_WORKERS"] <= MAX_PDF_WORKERS:
        raise SettingsError(f"PDF_WORKERS must be between 1 and {MAX_PDF_WORKERS}, got {settings['PDF_WORKERS']}")


def chosen(name: str, settings: Settings, env: Mapping[str, str] | None = None) -> bool:
    """Whether a person chose the setting `name`: set in the environment (`env`, or the
    process's), or to another value than the built-in default in `config/defaults.yaml`."""
    env = os.environ if env is None else env
    return bool(env.get(name)) or getattr(settings, name) != DEFAULTS[name]


def database_label(settings: Mapping[str, Any]) -> str:
    """Where the data lives, for people: the file, or the PostgreSQL URL without password."""
    url = str(settings.get("DATABASE_URL") or "")
    if not url:
        return str(settings["DATABASE_PATH"])
    scheme, _, rest = url.partition("://")
    credentials, at, where = rest.rpartition("@")
    user = credentials.partition(":")[0]
    return f"{scheme}://{user}{at}{where}"
