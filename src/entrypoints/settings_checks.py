"""The rules between settings (each value has passed its own declaration in
entrypoints/settings.py first), and the defaults file a configuration directory may hold."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from domain.attachments import attachment_types
from domain.errors import InvalidInput
from domain.principals import TrustedProxies
from domain.webhooks import AllowedHosts
from entrypoints.settings_rules import SettingsError


def _reserve_fits(s: dict[str, Any], env: Mapping[str, str]) -> None:
    # a default reserve that a small window cannot hold shrinks to fit: MODEL_CONTEXT=1024
    # alone must start (one set by hand over half the window is still an error)
    if not env.get("MODEL_RESERVE"):
        s["MODEL_RESERVE"] = min(s["MODEL_RESERVE"], s["MODEL_CONTEXT"] // 2)
    if s["MODEL_RESERVE"] > s["MODEL_CONTEXT"] // 2:
        raise SettingsError(
            f"MODEL_RESERVE must be between 0 and half of MODEL_CONTEXT ({s['MODEL_CONTEXT'] // 2}), got {s['MODEL_RESERVE']}"
        )


def _proxy_named(s: dict[str, Any], env: Mapping[str, str]) -> None:
    try:
        TrustedProxies(s["TRUSTED_PROXY_IPS"])
    except InvalidInput as e:
        raise SettingsError(e.message) from None
    if s["AUTH"] != "proxy":
        return
    if not s["TRUSTED_PROXY_IPS"].strip():
        raise SettingsError("AUTH=proxy needs TRUSTED_PROXY_IPS (the proxies' addresses)")
    if not s["PROXY_USER_HEADER"].strip():
        raise SettingsError("PROXY_USER_HEADER must name a header (e.g. Remote-User)")


def _webhook_hosts(s: dict[str, Any], env: Mapping[str, str]) -> None:
    try:
        AllowedHosts.parse(s["WEBHOOK_ALLOWED_HOSTS"])
    except ValueError as e:
        raise SettingsError(f"WEBHOOK_ALLOWED_HOSTS: {e}") from None


def _postgres_has_url(s: dict[str, Any], env: Mapping[str, str]) -> None:
    # unset keeps what configurations meant before the setting existed: a URL means PostgreSQL
    if s["STORAGE_BACKEND"] == "postgres" and not s["DATABASE_URL"]:
        raise SettingsError("STORAGE_BACKEND=postgres needs DATABASE_URL (a postgresql:// URL)")


# each (settings so far, environment) -> None, after every value passed its own declaration
CROSS_CHECKS: tuple[Callable[[dict[str, Any], Mapping[str, str]], None], ...] = (
    _reserve_fits,
    _proxy_named,
    _postgres_has_url,
    _webhook_hosts,
)


def defaults_file(path: Path) -> dict[str, Any]:
    """The settings a defaults file changes (none when there is no file)."""
    if not path.is_file():
        return {}
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise SettingsError(f"{path}: not valid YAML ({e})") from e
    if not isinstance(loaded, dict):
        raise SettingsError(f"{path}: must map setting names to values")
    return loaded


# --- checks of one value, named in the declarations ---------------------------------


def postgres_url(name: str, value: str) -> None:
    if value and not value.startswith(("postgresql://", "postgres://")):
        raise SettingsError(f"{name} must be a postgresql:// URL, got {database_label({'DATABASE_URL': value})!r}")


def attachment_types_ok(name: str, value: str) -> None:
    try:
        attachment_types(value)
    except ValueError as e:
        raise SettingsError(f"{name}: {e}") from None


def database_label(settings: Mapping[str, Any]) -> str:
    """Where the data lives, for people: the file, or the PostgreSQL URL without password."""
    url = str(settings.get("DATABASE_URL") or "")
    if not url:
        return str(settings["DATABASE_PATH"])
    scheme, _, rest = url.partition("://")
    credentials, at, where = rest.rpartition("@")
    user = credentials.partition(":")[0]
    return f"{scheme}://{user}{at}{where}"
