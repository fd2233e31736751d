"""A schedule that runs a hosted graph (issues 44, 46): LangGraph's cron (`/runs/crons`) is a
schedule whose firing sends the graph's own input rather than a chat message to Sophos's
agent. `GraphInput` is what each firing starts (a GraphRun on the schedule's thread, or on
a new thread per firing), with the cron's metadata and, for a cron without a thread, what
becomes of each firing's thread when its run ends (`on_run_completed`, as langgraph-api).
`CronQuery` is a search of crons, as LangGraph's `/runs/crons/search` asks it."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from domain.errors import InvalidInput
from domain.hosted import GraphRun

T = TypeVar("T")
MAX_PAYLOAD = 256 * 1024  # bytes of JSON (input, config, context, metadata): bounded as a run's body
MAX_WEBHOOK = 2048  # characters of a webhook URL (delivery is the webhooks' outbox's)


class OnCompleted(StrEnum):
    """What becomes of a thread-less cron's firing thread once its run ends."""

    DELETE = "delete"  # langgraph-api's default: the thread goes with its run
    KEEP = "keep"


@dataclass(frozen=True)
class GraphInput:
    """What a firing sends hosted graph `graph_id` (through assistant `assistant_id`): the
    run's own fields (input, config, context, stream modes, interrupts, durability), the
    cron's `metadata`, and `on_completed` (None for a cron on a thread: its thread stays)."""

    graph_id: str
    assistant_id: str
    input: Any = None
    config: Mapping[str, Any] = field(default_factory=dict)
    context: Any = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    stream_modes: tuple[str, ...] = ("values",)
    interrupt_before: tuple[str, ...] | str = ()
    interrupt_after: tuple[str, ...] | str = ()
    subgraphs: bool = False
    durability: str = "sync"
    on_completed: OnCompleted | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.metadata, Mapping):
            raise InvalidInput("metadata must be an object")
        try:
            size = len(json.dumps([self.input, self.config, self.context, self.metadata], allow_nan=False).encode())
        except (TypeError, ValueError) as e:
            raise InvalidInput(f"A cron's input must be JSON: {e}") from None
        if size > MAX_PAYLOAD:
            raise InvalidInput(f"A cron's input, config, context and metadata take at most {MAX_PAYLOAD} bytes of JSON")
        self.run("")  # GraphRun's own checks (modes, interrupts, durability)

    def run(self, thread_id: str) -> GraphRun:
        """The run a firing starts on `thread_id`."""
        return GraphRun(
            self.graph_id,
            thread_id,
            input=self.input,
            config=dict(self.config),
            context=self.context,
            stream_modes=self.stream_modes,
            interrupt_before=self.interrupt_before,
            interrupt_after=self.interrupt_after,
            subgraphs=self.subgraphs,
            durability=self.durability,
            assistant_id=self.assistant_id,  # its config, context and metadata merged in already
        )

    @classmethod
    def of(cls, run: GraphRun, assistant_id: str, metadata: Mapping[str, Any], on_completed: OnCompleted | None) -> GraphInput:
        """The input of `run` (a request's run, checked) kept for every firing."""
        if run.command is not None or run.checkpoint_id is not None:
            raise InvalidInput("A cron sends an input: not a command, nor a checkpoint to run from")
        return cls(
            run.graph_id,
            assistant_id,
            run.input,
            dict(run.config),
            run.context,
            dict(metadata),
            run.stream_modes,
            run.interrupt_before,
            run.interrupt_after,
            run.subgraphs,
            run.durability,
            on_completed,
        )

    def edited(self, run: GraphRun | None, metadata: Mapping[str, Any] | None, on_completed: OnCompleted | None) -> GraphInput:
        """This input with what an update gives (None: as it is)."""
        base = self if run is None else GraphInput.of(run, self.assistant_id, self.metadata, self.on_completed)
        return replace(
            base,
            metadata=dict(metadata) if metadata is not None else base.metadata,
            on_completed=on_completed or base.on_completed,
        )


def parse_on_completed(value: object) -> OnCompleted | None:
    if value is None:
        return None
    if isinstance(value, str) and value in OnCompleted.__members__.values():
        return OnCompleted(value)
    raise InvalidInput('on_run_completed must be "delete" or "keep"')


def check_webhook(value: object) -> str | None:
    """A webhook URL as given (http or https, bounded): stored with its cron; whether it may
    be called is decided when it is delivered."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith(("http://", "https://")) or len(value) > MAX_WEBHOOK:
        raise InvalidInput(f"webhook must be an http(s) URL of at most {MAX_WEBHOOK} characters")
    return value


SORT_KEYS = ("cron_id", "assistant_id", "thread_id", "created_at", "updated_at", "next_run_date", "end_time")
MAX_LIMIT = 1000


@dataclass(frozen=True)
class CronQuery:
    """A search of a user's crons: each filter None matches any; `metadata` matches crons
    whose metadata holds each of its pairs; sorted by `sort_by` (SORT_KEYS), then paged."""

    assistant_id: str | None = None
    thread_id: str | None = None
    enabled: bool | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    limit: int = 10
    offset: int = 0
    sort_by: str = "created_at"
    descending: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_LIMIT or self.offset < 0:
            raise InvalidInput(f"limit must be 1 to {MAX_LIMIT}, offset at least 0")
        if self.sort_by not in SORT_KEYS:
            raise InvalidInput(f"sort_by must be one of {', '.join(SORT_KEYS)}")

    def matches(
        self, assistant_id: str, graph_id: str, thread_id: str | None, enabled: bool, metadata: Mapping[str, Any]
    ) -> bool:
        return (
            (self.assistant_id is None or self.assistant_id in (assistant_id, graph_id))
            and (self.thread_id is None or self.thread_id == thread_id)
            and (self.enabled is None or self.enabled == enabled)
            and all(k in metadata and metadata[k] == v for k, v in self.metadata.items())
        )

    def page(self, found: Sequence[T], key: Callable[[T], object]) -> list[T]:
        """`found` sorted by `key` (None last, ascending) and paged."""
        ordered = sorted(found, key=lambda item: _sortable(key(item)), reverse=self.descending)
        return ordered[self.offset : self.offset + self.limit]


def _sortable(value: object) -> tuple[bool, str]:
    if isinstance(value, datetime):
        value = value.astimezone(UTC).isoformat()
    return (value is not None, "" if value is None else str(value))
