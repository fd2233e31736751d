"""`<CONFIG_DIR>/mcp.json`: server name -> stdio `{command, args, env}` or HTTP `{url}`; an
entry with `"disabled": true` is checked but not started (opt-in servers, such as web search)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PLACEHOLDERS = ("${MEMORY_FILE_PATH}", "${PYTHON}", "${CONFIG_DIR}")


class McpConfigError(ValueError):
    """Raised when mcp.json is missing, unreadable or malformed; names file and entry."""


def _expand(value: str, subs: dict[str, str]) -> str:
    for key, sub in subs.items():
        value = value.replace(key, sub)
    return value


@dataclass(frozen=True)
class McpConfig:
    """The usable servers, and the entries left out, each with why (one bad entry
    disables that server only)."""

    servers: dict[str, dict[str, Any]]
    errors: dict[str, str]
    # server -> (`approve`, `autoApprove`): globs over its tools' names (domain.approvals)
    approval: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)
    timeouts: dict[str, float] = field(default_factory=dict)  # server -> its `timeout`, seconds a call may take
    disabled: tuple[str, ...] = ()  # well-formed entries with `"disabled": true`: not started


def load_mcp_config(config_dir: Path, memory_file: Path) -> McpConfig:
    """Connections in the form langchain-mcp-adapters takes, keyed by server name.

    `${MEMORY_FILE_PATH}` becomes the absolute memory file path (its directory created),
    `${PYTHON}` this interpreter, `${CONFIG_DIR}` the absolute config directory. A file
    that cannot be read or is not a JSON object raises McpConfigError.
    """
    path = config_dir / "mcp.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return McpConfig({}, {})
    except (OSError, ValueError, RecursionError) as e:
        raise McpConfigError(f"Failed to load MCP configuration from {path}: {e}") from e
    if not isinstance(raw, dict):
        raise McpConfigError(f"MCP configuration in {path} must map server names to objects")
    servers = raw.get("mcpServers", raw) if isinstance(raw.get("mcpServers"), dict) else raw
    memory = memory_file.resolve()
    subs = {"${MEMORY_FILE_PATH}": str(memory), "${PYTHON}": sys.executable, "${CONFIG_DIR}": str(config_dir.resolve())}
    out, disabled = McpConfig({}, {}), list[str]()
    for name, entry in servers.items():
        try:
            conn = _connection(name, entry, memory, subs)  # checks that entry is an object
            approval = (_globs(entry, "approve"), _globs(entry, "autoApprove"))
            timeout = _timeout(entry["timeout"]) if "timeout" in entry else None
            if not isinstance(entry.get("disabled", False), bool):
                raise McpConfigError("disabled must be true or false")
        except McpConfigError as e:
            out.errors[name] = f"MCP configuration in {path}, server {name!r}: {e}"
            continue
        if entry.get("disabled") is True:  # checked all the same: enabling it is this one change
            disabled.append(name)
            continue
        out.servers[name], out.approval[name] = conn, approval
        if timeout is not None:
            out.timeouts[name] = timeout
    return McpConfig(out.servers, out.errors, out.approval, out.timeouts, tuple(disabled))


MAX_TIMEOUT = 86_400.0


def _timeout(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TIMEOUT:
        raise McpConfigError(f"timeout must be a number of seconds above 0, at most {MAX_TIMEOUT:g}")
    return float(value)


def _globs(entry: dict[str, Any], key: str) -> tuple[str, ...]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(g, str) for g in value):
        raise McpConfigError(f"{key} must be a list of tool name globs")
    return tuple(value)


def _connection(name: str, entry: object, memory: Path, subs: dict[str, str]) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise McpConfigError("must be an object")
    if "__" in name or not name:
        raise McpConfigError("a server name must be non-empty and without '__'")
    if "url" in entry:
        if not isinstance(entry["url"], str) or not entry["url"].startswith(("http://", "https://")):
            raise McpConfigError("url must be an http(s) URL")
        conn: dict[str, Any] = {"transport": "streamable_http", "url": entry["url"]}
        if isinstance(entry.get("headers"), dict):
            conn["headers"] = {str(k): str(v) for k, v in entry["headers"].items()}
        return conn
    if "command" not in entry:
        raise McpConfigError("needs either command (stdio) or url (HTTP)")
    args, env = entry.get("args", []), entry.get("env", {})
    if not isinstance(entry["command"], str) or not entry["command"]:
        raise McpConfigError("command must be a non-empty string")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise McpConfigError("args must be a list of strings")
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise McpConfigError("env must map names to strings")
    if any("${MEMORY_FILE_PATH}" in v for v in env.values()):
        memory.parent.mkdir(parents=True, exist_ok=True)
    return {
        "transport": "stdio",
        "command": _expand(entry["command"], subs),
        "args": [_expand(a, subs) for a in args],
        "env": {k: _expand(v, subs) for k, v in env.items()} or None,
    }
