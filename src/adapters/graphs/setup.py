"""What a `langgraph.json` asks of the process before its graphs are imported: the file read
(bounded) and checked (domain.graphs), its `env` set, its local `dependencies` put on the
import path, and the packages it lists looked up, as `langgraph dev` does (langgraph-cli
appends the directories to `sys.path`; langgraph-api sets `env` in the process environment,
over what was there)."""

from __future__ import annotations

import importlib.metadata
import os
import re
import sys
from pathlib import Path

from dotenv import dotenv_values

from domain.graphs import MAX_CONFIG_BYTES, GraphLoadFailed, GraphsConfig, one_line, parse_graphs_config

_PACKAGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def read_config(path: str | os.PathLike[str]) -> GraphsConfig:
    """The file at `path`, checked; GraphLoadFailed (one line, naming the file) when it cannot
    be read or is not a langgraph.json."""
    file = Path(path).expanduser()
    try:
        file = file.resolve()
        with file.open("rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise GraphLoadFailed(f"{file}: {one_line(e.strerror or str(e))}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise GraphLoadFailed(f"{file}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    return parse_graphs_config(text, str(file))


def prepare(config: GraphsConfig) -> tuple[str, ...]:
    """Set the file's env, put its directory and local dependencies on the import path (after
    what is there, so they never shadow the server's own modules), and answer one notice per
    listed package the environment lacks. GraphLoadFailed for an env file or a dependency
    directory that is not there."""
    os.environ.update(_env(config))
    for directory in (os.path.dirname(config.path), *config.import_paths):
        if not os.path.isdir(directory):
            raise config.fault(f"dependency {directory} is not a directory")
        if directory not in sys.path:
            sys.path.append(directory)
    return tuple(
        f"{config.path}: package {name!r} is listed in `dependencies` but not installed "
        "(install it into the server's environment)"
        for name in missing_packages(config.packages)
    )


def _env(config: GraphsConfig) -> dict[str, str]:
    if config.env_file is None:
        return dict(config.env)
    if not os.path.isfile(config.env_file):
        raise config.fault(f"env file {config.env_file} not found")
    try:
        values = dotenv_values(config.env_file, encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise config.fault(f"env file {config.env_file}: {e}") from None
    # a line without `=` has no value: dotenv gives None, and the variable is left alone
    return {name: value for name, value in values.items() if value is not None and "\x00" not in value}


def missing_packages(requirements: tuple[str, ...]) -> list[str]:
    """The listed requirements (`name`, `name[extra]>=1`) whose distribution is not installed;
    what cannot be read as a name (a URL, a VCS reference) is not checked."""
    missing = []
    for requirement in requirements:
        name = _PACKAGE_NAME.match(requirement)
        if name is None or "://" in requirement or requirement.startswith("git+"):
            continue
        try:
            importlib.metadata.distribution(name.group())
        except importlib.metadata.PackageNotFoundError:
            missing.append(name.group())
    return missing
