"""Graphs of one's own: what a `langgraph.json` (langgraph-cli's format) declares, as plain
values, and the rules that read it. Pure: the file's text comes in, a `GraphsConfig` (or a
`GraphLoadFailed` naming the file and the fault) comes out; importing the graphs is an
adapter's work (adapters.graphs).

The format, as langgraph-cli reads it for `langgraph dev`:

    {"graphs": {"agent": "./graph/agent.py:graph", "other": "my_package.module:make_graph"},
     "dependencies": ["./graph", "langchain"],
     "env": ".env"}                       (or a mapping of names to values)

- `graphs` (required): graph id to `PATH.py:ATTR` (a file, relative to the file's directory)
  or `MODULE:ATTR` (a module on the import path), or `{"path": ..., "description": ...}`.
- `dependencies`: local directories (`.`, `./x`, `../x`, `/x`) go on the import path;
  anything else names a package, which the server's environment must already have.
- `env`: a `.env` file (relative to the file's directory) or a mapping of strings.
Keys that configure what Sophos does its own way (`store`, `auth`, `http`, `checkpointer`,
...) are read and reported as not applied; JavaScript graphs are refused."""

from __future__ import annotations

import json
import posixpath
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from domain.errors import ErrorCode, SophosError

GRAPH_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430cd")  # langgraph-api's, for assistant ids
MAX_CONFIG_BYTES = 1_048_576  # a langgraph.json is a few hundred bytes; more is not one
MAX_GRAPHS = 256
MAX_GRAPH_ID = 128
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# what langgraph-cli also reads from the file but Sophos does its own way, or not at all
NOT_APPLIED = ("store", "auth", "http", "checkpointer", "ui", "ui_config", "webhooks", "encryption")
# any other key (python_version, dockerfile_lines, ...: the image `langgraph build` makes) is ignored


class GraphLoadFailed(SophosError):
    """Raised when a `langgraph.json`, or a graph it names, cannot be read or imported; the
    message is one line naming the file and the fault."""

    code = ErrorCode.BAD_GRAPH
    default_message = "The graphs file could not be loaded"


Fail = Callable[[str], "GraphLoadFailed"]


class GraphNotFound(SophosError):
    """Raised when no graph of the graphs file has the id asked for."""

    code = ErrorCode.NOT_FOUND
    default_message = "No such graph"


class GraphKind(StrEnum):
    """What a graph's attribute holds, which says how the server gets a runnable graph."""

    COMPILED = "compiled"  # a compiled graph (StateGraph.compile(), @entrypoint, any Pregel): used as it is
    STATE_GRAPH = "state graph"  # a StateGraph builder: the server compiles it
    FACTORY = "factory"  # a function (sync or async, or a context manager) that makes the graph for each use


@dataclass(frozen=True)
class GraphSource:
    """Where one graph is, as the file says: a file (`path`, absolute) or a module, and the
    attribute (`attr`, dotted) in it."""

    graph_id: str
    spec: str  # as written in the file
    attr: str
    path: str | None = None
    module: str | None = None
    description: str = ""


@dataclass(frozen=True)
class HostedGraph:
    """A graph of the file once imported: its id, where it comes from (`source`, as written),
    its kind, and for a factory the arguments it is given (`config`, `runtime`)."""

    graph_id: str
    source: str
    kind: GraphKind
    factory_args: tuple[str, ...] = ()
    description: str = ""

    @property
    def assistant_id(self) -> str:
        """The id of the graph's assistant on the LangGraph API (assistant_id_of)."""
        return assistant_id_of(self.graph_id)

    @property
    def kind_text(self) -> str:
        """The kind for people: `factory(config, runtime)` for a factory."""
        if self.kind is GraphKind.FACTORY:
            return f"factory({', '.join(self.factory_args)})"
        return self.kind.value


@dataclass(frozen=True)
class GraphsConfig:
    """A `langgraph.json`, checked: its graphs in the file's order, the directories to put on
    the import path, the packages it lists (which the environment must provide), its env
    (a `.env` file or values) and the keys read but not applied."""

    path: str
    graphs: tuple[GraphSource, ...]
    import_paths: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    env_file: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    not_applied: tuple[str, ...] = ()

    def fault(self, what: str) -> GraphLoadFailed:
        """The one-line error for a fault of this file."""
        return GraphLoadFailed(f"{self.path}: {one_line(what)}")


def assistant_id_of(graph_id: str) -> str:
    """The id langgraph-api gives a graph's default assistant, made at start-up:
    uuid5(LangGraph's graph namespace, the graph id)."""
    return str(uuid.uuid5(GRAPH_NAMESPACE, graph_id))


def one_line(text: str, limit: int = 500) -> str:
    """`text` on one line (whitespace runs become one space), at most `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def is_local(dependency: str) -> bool:
    """A dependency that is a directory (as langgraph-cli tells them apart), not a package."""
    return dependency in (".", "..") or dependency.startswith(("./", "../", "/"))


def parse_graphs_config(text: str, path: str) -> GraphsConfig:
    """The file's text, read as `langgraph.json` at `path` (absolute): relative paths in it are
    resolved against its directory. GraphLoadFailed names what is wrong, the first fault."""

    def fail(what: str) -> GraphLoadFailed:
        return GraphLoadFailed(f"{path}: {one_line(what)}")

    if len(text.encode("utf-8", "surrogatepass")) > MAX_CONFIG_BYTES:
        raise fail(f"larger than {MAX_CONFIG_BYTES // 1024} KiB, not a langgraph.json")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise fail(f"not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise fail("must be a JSON object with a `graphs` key")
    if data.get("node_version"):
        raise fail("JavaScript graphs (`node_version`) are not served; Sophos hosts Python graphs")
    base = posixpath.dirname(path)
    graphs = _graphs(data.get("graphs"), base, fail)
    import_paths, packages = _dependencies(data.get("dependencies", []), base, fail)
    env_file, env = _env(data.get("env"), base, fail)
    not_applied = tuple(k for k in NOT_APPLIED if data.get(k) not in (None, {}, []))
    return GraphsConfig(path, graphs, import_paths, packages, env_file, env, not_applied)


def _graphs(raw: Any, base: str, fail: Fail) -> tuple[GraphSource, ...]:
    if not isinstance(raw, dict) or not raw:
        raise fail("`graphs` must map at least one graph id to `./path.py:attr`")
    if len(raw) > MAX_GRAPHS:
        raise fail(f"`graphs` lists {len(raw)} graphs, more than {MAX_GRAPHS}")
    return tuple(_graph(graph_id, value, base, fail) for graph_id, value in raw.items())


def _graph(graph_id: str, value: Any, base: str, fail: Fail) -> GraphSource:
    if not graph_id.strip() or len(graph_id) > MAX_GRAPH_ID or not graph_id.isprintable() or "/" in graph_id:
        raise fail(f"graph id {graph_id[:MAX_GRAPH_ID]!r}: 1 to {MAX_GRAPH_ID} printable characters, no '/'")
    description = ""
    if isinstance(value, Mapping):
        description = value.get("description") or ""
        if not isinstance(description, str):
            raise fail(f"graph {graph_id!r}: `description` must be a string")
        value = value.get("path")
    if not isinstance(value, str):
        raise fail(f'graph {graph_id!r}: must be a string `./path.py:attr` (or {{"path": ...}})')
    location, colon, attr = value.rpartition(":")
    if not colon or not location or not _DOTTED.fullmatch(attr):
        raise fail(f"graph {graph_id!r}: {value!r} is not `./path.py:attr` or `module:attr`")
    if location.endswith((".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx")):
        raise fail(f"graph {graph_id!r}: {value!r} is a JavaScript graph; Sophos hosts Python graphs")
    if location.endswith(".py") or "/" in location:
        where = posixpath.normpath(posixpath.join(base, location))
        return GraphSource(graph_id, value, attr, path=where, description=description)
    if not _DOTTED.fullmatch(location):
        raise fail(f"graph {graph_id!r}: {location!r} is neither a .py file nor a module name")
    return GraphSource(graph_id, value, attr, module=location, description=description)


def _dependencies(raw: Any, base: str, fail: Fail) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if not isinstance(raw, list) or not all(isinstance(d, str) and d.strip() for d in raw):
        raise fail("`dependencies` must be a list of directories (./dir) and package names")
    paths = tuple(posixpath.normpath(posixpath.join(base, d)) for d in raw if is_local(d))
    return paths, tuple(d.strip() for d in raw if not is_local(d))


def _env(raw: Any, base: str, fail: Fail) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    if raw is None or raw == {}:
        return None, ()
    if isinstance(raw, str) and raw.strip():
        return posixpath.normpath(posixpath.join(base, raw)), ()
    if not isinstance(raw, dict):
        raise fail("`env` must be the path of a .env file or a mapping of names to strings")
    for name, value in raw.items():
        if not _ENV_NAME.fullmatch(name) or not isinstance(value, str) or "\x00" in value:
            raise fail(f"`env`: {name[:64]!r} must be a variable name with a string value")
    return None, tuple(raw.items())
