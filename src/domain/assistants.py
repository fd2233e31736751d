"""Assistants of hosted graphs (issue 44), as langgraph-api keeps them: a graph with a
config, a context and metadata under an id, versioned (every update is a new version, one of
which is the latest: the one runs use). Each hosted graph has one made at start-up (its id
`domain.graphs.assistant_id_of(graph_id)`, `owner` None: everyone's); the others are made by
a user, who owns them (another user's answers as unknown). Pure values and rules; the store
is ports.assistants, the JSON entrypoints.lgapi.shapes."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from domain.errors import ErrorCode, InvalidInput, SophosError

MAX_ASSISTANTS = 1000  # a user's assistants (the search reads them whole, so bounded)
MAX_VERSIONS = 1000  # an assistant's versions
MAX_JSON = 16 * 1024  # each of config, context and metadata, as JSON (as thread metadata)
MAX_NAME = 512
MAX_LIMIT = 1000
IF_EXISTS = ("raise", "do_nothing")
SORT_BY = ("assistant_id", "graph_id", "name", "created_at", "updated_at")
SYSTEM_METADATA = {"created_by": "system"}  # what langgraph-api stamps on a graph's start-up assistant


class AssistantExists(SophosError):
    """Raised when an assistant is created with an id that is taken (whoever holds it)."""

    code = ErrorCode.ASSISTANT_EXISTS
    default_message = "Assistant already exists"


class TooManyAssistants(SophosError):
    """Raised when a user has the most assistants allowed, or an assistant the most versions."""

    code = ErrorCode.ASSISTANT_LIMIT
    default_message = "Too many assistants, or versions of one"


@dataclass(frozen=True)
class Assistant:
    """One version of an assistant (the latest, for the assistant itself). `owner`: the user
    who made it; None for a graph's start-up assistant, which every user sees."""

    assistant_id: str
    graph_id: str
    name: str
    config: Mapping[str, Any]
    context: Mapping[str, Any]
    metadata: Mapping[str, Any]
    version: int
    created_at: datetime
    updated_at: datetime
    description: str | None = None
    owner: str | None = None

    @property
    def system(self) -> bool:
        return self.owner is None


def _json_object(value: object, name: str) -> dict[str, Any]:
    """`value` (None: empty) as a JSON object of at most MAX_JSON bytes; InvalidInput otherwise."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(f"{name} must be an object")
    try:
        size = len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode())
    except (TypeError, ValueError):
        raise InvalidInput(f"{name} must be JSON") from None
    if size > MAX_JSON:
        raise InvalidInput(f"{name} is larger than {MAX_JSON} bytes")
    return dict(value)


def _text(value: object, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_NAME or "\x00" in value:
        raise InvalidInput(f"{name} must be a text of at most {MAX_NAME} characters")
    return value


def settle(config: Mapping[str, Any], context: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Config and context kept in step as langgraph-api keeps them: both a `configurable` and a
    context is refused; a `configurable` is also the context, a context also the `configurable`."""
    config, context = dict(config), dict(context)
    configurable = config.get("configurable")
    if configurable is not None and not isinstance(configurable, dict):
        raise InvalidInput("config.configurable must be an object")
    if configurable and context:
        raise InvalidInput("Cannot specify both configurable and context: prefer setting context alone")
    if configurable:
        context = dict(configurable)
    elif context:
        config["configurable"] = dict(context)
    return config, context


@dataclass(frozen=True)
class NewAssistant:
    """POST /assistants: `assistant_id` None gets a new one; `if_exists` raise (409) or
    do_nothing (the one there, when the caller may see it)."""

    graph_id: str
    assistant_id: str | None = None
    name: str | None = None
    description: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    context: Mapping[str, Any] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    if_exists: str = "raise"

    def __post_init__(self) -> None:
        if not isinstance(self.graph_id, str) or not self.graph_id:
            raise InvalidInput("graph_id is required")
        if self.assistant_id is not None:
            object.__setattr__(self, "assistant_id", valid_id(self.assistant_id))
        if self.if_exists not in IF_EXISTS:
            raise InvalidInput('if_exists must be "raise" or "do_nothing"')
        _text(self.name, "name")
        _text(self.description, "description")
        config, context = settle(_json_object(self.config, "config"), _json_object(self.context, "context"))
        object.__setattr__(self, "config", config)
        object.__setattr__(self, "context", context)
        object.__setattr__(self, "metadata", _json_object(self.metadata, "metadata"))

    def made(self, owner: str | None, now: datetime) -> Assistant:
        """Its version 1, owned by `owner`."""
        return Assistant(
            self.assistant_id or str(uuid.uuid4()),
            self.graph_id,
            self.name or "Untitled",
            self.config,
            self.context,
            self.metadata,
            1,
            now,
            now,
            self.description,
            owner,
        )


@dataclass(frozen=True)
class AssistantPatch:
    """PATCH /assistants/{id}: each field given replaces the assistant's (metadata is merged
    key by key), and the result is a new version, the latest (langgraph-api's rule)."""

    graph_id: str | None = None
    name: str | None = None
    description: str | None = None
    config: Mapping[str, Any] | None = None
    context: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.graph_id is not None and (not isinstance(self.graph_id, str) or not self.graph_id):
            raise InvalidInput("graph_id must be a graph's id")
        _text(self.name, "name")
        _text(self.description, "description")
        for name in ("config", "context", "metadata"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, _json_object(getattr(self, name), name))
        settle(self.config or {}, self.context or {})  # both a configurable and a context: refused

    def applied(self, current: Assistant, version: int, now: datetime) -> Assistant:
        """`current` patched into version `version`."""
        config, context = settle(self.config or {}, self.context or {})
        return replace(
            current,
            graph_id=self.graph_id if self.graph_id is not None else current.graph_id,
            name=self.name if self.name is not None else current.name,
            description=self.description if self.description is not None else current.description,
            config=config if config else current.config,
            context=context if self.context is not None or config.get("configurable") else current.context,
            metadata={**current.metadata, **self.metadata} if self.metadata is not None else current.metadata,
            version=version,
            updated_at=now,
        )


def contains(superset: Mapping[str, Any], subset: Mapping[str, Any]) -> bool:
    """PostgreSQL's jsonb `@>` on objects, as langgraph-api filters metadata."""
    for key, value in subset.items():
        if key not in superset:
            return False
        if isinstance(value, dict) and isinstance(superset[key], dict):
            if not contains(superset[key], value):
                return False
        elif superset[key] != value:
            return False
    return True


def _limit(value: object, name: str, default: int, low: int) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= (MAX_LIMIT if name == "limit" else 10**9):
        raise InvalidInput(f"{name} must be an integer from {low}" + (f" to {MAX_LIMIT}" if name == "limit" else ""))
    return value


@dataclass(frozen=True)
class AssistantQuery:
    """POST /assistants/search and /count: `graph_id` exactly, `name` as a part of the name
    (any case), `metadata` contained; sorted (`created_at` newest first by default), paged."""

    graph_id: str | None = None
    name: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    limit: int = 10
    offset: int = 0
    sort_by: str | None = None
    sort_order: str | None = None

    def __post_init__(self) -> None:
        _text(self.name, "name")
        object.__setattr__(self, "metadata", _json_object(self.metadata, "metadata"))
        object.__setattr__(self, "limit", _limit(self.limit, "limit", 10, 1))
        object.__setattr__(self, "offset", _limit(self.offset, "offset", 0, 0))
        if self.sort_by is not None and self.sort_by not in SORT_BY:
            raise InvalidInput(f"sort_by must be one of {', '.join(SORT_BY)}")
        if self.sort_order is not None and str(self.sort_order).lower() not in ("asc", "desc"):
            raise InvalidInput('sort_order must be "asc" or "desc"')

    def matches(self, a: Assistant) -> bool:
        return (
            (not self.graph_id or a.graph_id == self.graph_id)
            and (not self.name or self.name.lower() in a.name.lower())
            and contains(a.metadata, self.metadata)
        )

    def select(self, assistants: Iterable[Assistant]) -> list[Assistant]:
        found = [a for a in assistants if self.matches(a)]
        key = self.sort_by or "created_at"
        descending = (self.sort_order or "desc").lower() == "desc"

        def order(a: Assistant) -> Any:
            value = getattr(a, key)
            return value.lower() if key in ("name", "graph_id") else value

        found.sort(key=order, reverse=descending)
        return found[self.offset : self.offset + self.limit]


def page_versions(versions: Sequence[Assistant], metadata: Mapping[str, Any], limit: int, offset: int) -> list[Assistant]:
    """POST /assistants/{id}/versions: newest first, `metadata` contained, paged."""
    found = [v for v in sorted(versions, key=lambda v: v.version, reverse=True) if contains(v.metadata, metadata)]
    return found[offset : offset + limit]


def valid_id(value: object) -> str:
    """An assistant id: a UUID, as langgraph-api requires (InvalidInput otherwise)."""
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise InvalidInput("Invalid assistant ID: must be a UUID") from None


def run_settings(
    assistant: Assistant, config: Mapping[str, Any], context: Any, metadata: Mapping[str, Any] | None
) -> tuple[dict[str, Any], Any]:
    """A run's config and context with its assistant's under them, as langgraph-api merges
    them: a request's context is also its `configurable`, and its `configurable` its context
    (both at once: refused); the request's keys go over the assistant's (`configurable` and
    `metadata` key by key, the run's metadata last, and the context); the assistant's and
    graph's ids in `configurable` and `metadata`. A context that is no object is the run's."""
    given = dict(config.get("configurable") or {})
    if isinstance(context, dict) and context and given:
        raise InvalidInput("Cannot specify both configurable and context: prefer setting context alone")
    if isinstance(context, dict) and context:
        given = dict(context)
    configurable = {**(assistant.config.get("configurable") or {}), **given}
    configurable.update(assistant_id=assistant.assistant_id, graph_id=assistant.graph_id)
    merged_metadata = {**assistant.metadata, **(config.get("metadata") or {}), **(metadata or {})}
    merged_metadata["assistant_id"] = assistant.assistant_id
    merged = {**assistant.config, **config, "configurable": configurable, "metadata": merged_metadata}
    if context is None or isinstance(context, dict):
        return merged, ({**assistant.context, **given} or None)
    return merged, context
