"""The store's values and rules (LangGraph's `BaseStore` semantics, issue 45): items under
namespaces, each namespace owned by one user.

A namespace is a tuple of labels (`("notes",)`, `("memories",)`); an item is a JSON object
under a namespace and a key. Every namespace belongs to a user: alice's `("notes",)` and
bob's `("notes",)` are two namespaces, and nothing a user does names another's. The rules
here are pure functions over plain values, so the three backends decide alike: what a valid
namespace is, whether an item's value matches a filter, whether a namespace matches a
`list_namespaces` condition, and the text a full-text index keeps of a value."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from domain.errors import InvalidInput
from domain.ranking import fuse

Namespace = tuple[str, ...]

MAX_LABEL = 256  # characters of a namespace label
MAX_DEPTH = 16  # labels of a namespace
MAX_KEY = 512  # characters of a key
MAX_VALUE_BYTES = 1024 * 1024  # an item's value as JSON (UTF-8)
MAX_QUERY = 1000  # characters of a full-text query
MAX_LIMIT = 1000
MAX_TTL_MINUTES = 100 * 365 * 24 * 60
WILDCARD = "*"  # in a list_namespaces prefix or suffix: any one label
OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})


@dataclass(frozen=True)
class StoreItem:
    """An item as stored; `score` only on a query's results (higher: better): the full-text
    rank, or with an embedding model the fused rank (domain.ranking.fuse)."""

    namespace: Namespace
    key: str
    value: Mapping[str, Any]
    created_at: datetime
    updated_at: datetime
    score: float | None = None


@dataclass(frozen=True)
class PutItem:
    """Store `value` under (namespace, key), replacing what was there. `ttl_minutes`: the
    item expires that long after its last write (or refreshing read); None: never.
    `index`: False keeps the item out of full-text search; None or a list of field paths
    (LangGraph's argument) index its text."""

    namespace: Namespace
    key: str
    value: Mapping[str, Any]
    ttl_minutes: float | None = None
    index: bool = True

    def __post_init__(self) -> None:
        check_namespace(self.namespace)
        check_key(self.key)
        check_value(self.value)
        if self.ttl_minutes is not None:
            check_ttl(self.ttl_minutes)


@dataclass(frozen=True)
class SearchItems:
    """Items under `prefix` (the namespace itself or deeper), matching `filter` (LangGraph's:
    a field's value, or `{"$gt": …}` and the other comparison operators), and `query` in
    their text when given, best first; else the most recently updated first."""

    prefix: Namespace
    query: str | None = None
    filter: Mapping[str, Any] = field(default_factory=dict)
    limit: int = 10
    offset: int = 0
    refresh_ttl: bool = False

    def __post_init__(self) -> None:
        check_namespace(self.prefix, empty=True)
        check_filter(self.filter)
        check_window(self.limit, self.offset)
        if self.query is not None and (not isinstance(self.query, str) or len(self.query) > MAX_QUERY):
            raise InvalidInput(f"query must be a string of at most {MAX_QUERY} characters")


@dataclass(frozen=True)
class ListNamespaces:
    """The distinct namespaces holding items, matching `prefix` and `suffix` (`*` matches
    any one label), cut to `max_depth` labels when given, in order."""

    prefix: Namespace | None = None
    suffix: Namespace | None = None
    max_depth: int | None = None
    limit: int = 100
    offset: int = 0

    def __post_init__(self) -> None:
        for given in (self.prefix, self.suffix):
            if given is not None:
                check_namespace(given, empty=True, wildcard=True)
        if self.max_depth is not None and (isinstance(self.max_depth, bool) or not isinstance(self.max_depth, int)):
            raise InvalidInput("max_depth must be an integer")
        if self.max_depth is not None and self.max_depth < 1:
            raise InvalidInput("max_depth must be at least 1")
        check_window(self.limit, self.offset)

    def select(self, namespaces: Sequence[Namespace]) -> list[Namespace]:
        """The page of `namespaces` (every one holding an item) this query answers."""
        found: set[Namespace] = set()
        for ns in namespaces:
            if self.prefix is not None and not _labels_match(ns[: len(self.prefix)], self.prefix):
                continue
            if self.suffix is not None and (
                len(ns) < len(self.suffix) or not _labels_match(ns[-len(self.suffix) :], self.suffix)
            ):
                continue
            found.add(ns[: self.max_depth] if self.max_depth is not None else ns)
        return sorted(found)[self.offset : self.offset + self.limit]


def _labels_match(labels: Namespace, pattern: Namespace) -> bool:
    return len(labels) == len(pattern) and all(p == WILDCARD or p == label for label, p in zip(labels, pattern, strict=True))


def check_namespace(namespace: object, empty: bool = False, wildcard: bool = False) -> Namespace:
    """A namespace is a tuple of non-empty labels without a period (the API joins them with
    periods), at most MAX_DEPTH of them; `empty` allows the empty prefix."""
    if not isinstance(namespace, tuple) or not all(isinstance(label, str) for label in namespace):
        raise InvalidInput("A namespace must be a list of strings")
    if not namespace and not empty:
        raise InvalidInput("A namespace must have at least one label")
    if len(namespace) > MAX_DEPTH:
        raise InvalidInput(f"A namespace has at most {MAX_DEPTH} labels")
    for label in namespace:
        if not label or "." in label or "\x00" in label or len(label) > MAX_LABEL or (label == WILDCARD and not wildcard):
            raise InvalidInput(
                f"Namespace label {label[:40]!r} must be a non-empty string of at most {MAX_LABEL} characters without periods"
            )
    return namespace


def check_key(key: object) -> str:
    if not isinstance(key, str) or not key or len(key) > MAX_KEY or "\x00" in key:
        raise InvalidInput(f"key must be a non-empty string of at most {MAX_KEY} characters, without NUL")
    return key


def check_value(value: object) -> None:
    if not isinstance(value, Mapping):
        raise InvalidInput("value must be an object")
    try:
        size = len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8"))
        nul = _has_nul(value)
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError):
        raise InvalidInput("value must be JSON (finite numbers, valid Unicode, not nested too deep)") from None
    if nul:  # no database keeps a NUL character in text
        raise InvalidInput("value must not hold a NUL character")
    if size > MAX_VALUE_BYTES:
        raise InvalidInput(f"value is {size} bytes as JSON; at most {MAX_VALUE_BYTES}")


def _has_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_has_nul(v) for v in value)
    return False


def check_ttl(ttl: object) -> float:
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl) or not 0 < ttl <= MAX_TTL_MINUTES:
        raise InvalidInput(f"ttl must be a number of minutes above 0 and at most {MAX_TTL_MINUTES}")
    return float(ttl)


def check_window(limit: object, offset: object) -> None:
    for name, value, low, high in (("limit", limit, 1, MAX_LIMIT), ("offset", offset, 0, 1_000_000)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise InvalidInput(f"{name} must be an integer between {low} and {high}")


def check_filter(filter: object) -> None:
    if not isinstance(filter, Mapping):
        raise InvalidInput("filter must be an object")
    for name, wanted in filter.items():
        if isinstance(wanted, Mapping) and any(str(k).startswith("$") for k in wanted):
            unknown = [k for k in wanted if k not in OPERATORS]
            if unknown:
                raise InvalidInput(f"filter on {name!r}: unknown operator {unknown[0]!r} (known: {', '.join(sorted(OPERATORS))})")


def _field(value: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    here: Any = value
    for part in path.split("."):
        if not isinstance(here, Mapping) or part not in here:
            return False, None
        here = here[part]
    return True, here


def _compare(op: str, have: Any, want: Any) -> bool:
    if op == "$eq":
        return bool(have == want)
    if op == "$ne":
        return bool(have != want)
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (have, want))
    if not numbers and not (isinstance(have, str) and isinstance(want, str)):
        return False  # an order between a number and a string is not one
    return bool({"$gt": have > want, "$gte": have >= want, "$lt": have < want, "$lte": have <= want}[op])


def matches(value: Mapping[str, Any], filter: Mapping[str, Any]) -> bool:
    """Whether an item's value matches a search filter: each key a field (dotted for a nested
    one) equal to the value given, or compared by the operators given."""
    for name, wanted in filter.items():
        present, have = _field(value, str(name))
        if isinstance(wanted, Mapping) and any(str(k).startswith("$") for k in wanted):
            if not all((present or op == "$ne") and _compare(op, have, w) for op, w in wanted.items()):
                return False
        elif not present or have != wanted:
            return False
    return True


def in_prefix(namespace: Namespace, prefix: Namespace) -> bool:
    return namespace[: len(prefix)] == prefix


def text_of(value: object) -> str:
    """The text a full-text index keeps of a value: its string leaves (keys left out), one a line."""
    out: list[str] = []

    def walk(v: object) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, Mapping):
            for item in v.values():
                walk(item)
        elif isinstance(v, list | tuple):
            for item in v:
                walk(item)

    walk(value)
    return "\n".join(out)


def expiry(now: datetime, ttl_minutes: float | None) -> datetime | None:
    return now + timedelta(minutes=ttl_minutes) if ttl_minutes is not None else None


def namespace_key(namespace: Namespace) -> str:
    """The namespace as one string that sorts and prefixes as the tuple does (labels cannot
    hold a period; a trailing period marks the end, so ("a",) is no prefix of ("ab",))."""
    return "".join(label + "." for label in namespace)


def namespace_of(key: str) -> Namespace:
    return tuple(key.split(".")[:-1])


def candidate_depth(query: SearchItems) -> int:
    """How many of each ranking a hybrid search fuses: twice the page's end, at least 50."""
    return max(50, 2 * (query.offset + query.limit))


def fused_page(lexical: Sequence[StoreItem], semantic: Sequence[StoreItem], query: SearchItems) -> list[StoreItem]:
    """A hybrid search's page: the full-text ranking and the embedding ranking (each best
    first, at most candidate_depth after the filter) fused by reciprocal rank, each item with
    its fused score."""
    depth = candidate_depth(query)
    legs = [[i for i in leg if matches(i.value, query.filter)][:depth] for leg in (lexical, semantic)]
    by_key = {(i.namespace, i.key): i for leg in legs for i in leg}
    fused = fuse([[(i.namespace, i.key) for i in leg] for leg in legs])
    return [replace(by_key[k], score=score) for k, score in fused[query.offset : query.offset + query.limit]]
