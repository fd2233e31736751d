"""LangGraph's thread protocol (langgraph-api 0.16's `/threads/{id}/commands` and
`/threads/{id}/stream/events`), as plain values: what a subscription asks for
(`Subscription`), and a thread's stored run events numbered and shaped as the protocol's
events (`ThreadProjection`).

A thread's event stream spans its runs. Each event carries `seq`, the run's place among
the thread's runs times SEQ_PER_RUN plus its place in the run, so the same event has the
same `seq` in every stream, whatever it filters (a client's `since` cursor is valid across
its streams and reconnects), and a stream that resumes after `since` skips the earlier runs
without reading them; `event_id` is `<run id>:<place>`. Around a run's own events the
server says its lifecycle at the root namespace: `running` when it starts, and when it ends
`interrupted` when it stops for input (after one `input.requested` per interrupt, said only
once the run has ended, so an answer never finds the thread busy), `completed`, `failed`
(with the error; a cancelled run too, error `cancelled`: it ends there, where langgraph-api
says `interrupted` and its clients wait on), or `interrupted` (stopped by a crash: the run
that resumes it follows)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from domain.errors import InvalidInput
from domain.events import StreamEvent
from domain.hosted import PROTOCOL_MODE, GraphChunk

SEQ_PER_RUN = 1 << 32
RUN_START = "run-start"  # the marker before each run's events (services.thread_feed): {"run_id", "ordinal"}
CHANNELS = frozenset({"values", "updates", "checkpoints", "messages", "tools", "custom", "lifecycle", "input", "tasks"})
MAX_CHANNELS = 64
MAX_NAMESPACES = 64
MAX_NAME = 256  # characters of a channel or a namespace segment
# the modes of a run not started through the protocol that the protocol also has
_PLAIN = frozenset({"values", "updates", "custom", "tasks", "checkpoints"})
_ENDED = {"completed": "completed", "waiting": "interrupted", "failed": "failed"}

Event = dict[str, Any]


def _namespaces(raw: object) -> tuple[tuple[str, ...], ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) > MAX_NAMESPACES:
        raise InvalidInput(f"namespaces must be a list of at most {MAX_NAMESPACES} namespaces")
    out = []
    for ns in raw:
        if not isinstance(ns, list) or not all(isinstance(s, str) and len(s) <= MAX_NAME for s in ns):
            raise InvalidInput("each namespace must be a list of strings")
        out.append(tuple(ns))
    return tuple(out)


def _int(raw: object, name: str) -> int | None:
    if raw is None:
        return None
    if not isinstance(raw, int) or isinstance(raw, bool) or raw < 0:
        raise InvalidInput(f"{name} must be a non-negative integer")
    return raw


@dataclass(frozen=True)
class Subscription:
    """What a client streams: `channels` (`custom:<name>`: custom events of that name),
    events of `namespaces` (prefixes; None: every namespace) at most `depth` below them
    (None: any depth), after `since` (a seq; None: from the run going)."""

    channels: frozenset[str]
    namespaces: tuple[tuple[str, ...], ...] | None = None
    depth: int | None = None
    since: int | None = None

    @classmethod
    def parse(cls, body: object) -> Subscription:
        """An EventStreamRequest (or a `subscription.subscribe`'s params), checked."""
        if not isinstance(body, Mapping):
            raise InvalidInput("The body must be an object")
        channels = body.get("channels")
        if not isinstance(channels, list) or not channels or len(channels) > MAX_CHANNELS:
            raise InvalidInput(f"channels is required: a non-empty list of at most {MAX_CHANNELS} channels")
        bad = [c for c in channels if not _known(c)]
        if bad:
            raise InvalidInput(
                f"Unknown channels: {', '.join(repr(c)[:64] for c in bad[:5])}; known: {', '.join(sorted(CHANNELS))}, custom:<name>"
            )
        return cls(
            frozenset(channels),
            _namespaces(body.get("namespaces")),
            _int(body.get("depth"), "depth"),
            _int(body.get("since"), "since"),
        )

    @property
    def first_run(self) -> int | None:
        """The place of the first run the stream needs (None: the thread's latest)."""
        return None if self.since is None else self.since // SEQ_PER_RUN

    def matches(self, event: Event) -> bool:
        if self.since is not None and event["seq"] <= self.since:
            return False
        method, params = event["method"], event["params"]
        channel = "input" if method == "input.requested" else method
        name = params["data"].get("name") if channel == "custom" and isinstance(params["data"], dict) else None
        if channel not in self.channels and not (name is not None and f"custom:{name}" in self.channels):
            return False
        ns = tuple(params["namespace"])
        if self.namespaces is None:
            return self.depth is None or len(ns) <= self.depth
        return any(ns[: len(p)] == p and (self.depth is None or len(ns) - len(p) <= self.depth) for p in self.namespaces)


def _known(channel: object) -> bool:
    if not isinstance(channel, str) or len(channel) > MAX_NAME:
        return False
    return channel in CHANNELS or (channel.startswith("custom:") and len(channel) > len("custom:"))


@dataclass
class ThreadProjection:
    """A thread's stored events (services.thread_feed: each run after its `run-start`
    marker) as protocol events, numbered; `now_ms` stamps them."""

    run_id: str = ""
    ordinal: int = 0
    place: int = 0
    asked: dict[str, tuple[list[str], Any]] = field(default_factory=dict)  # the run's interrupts: id -> (namespace, value)
    error: str | None = None

    def feed(self, event: StreamEvent, now_ms: int) -> list[Event]:
        if event.event == RUN_START:
            self.run_id, self.ordinal = str(event.data["run_id"]), int(event.data["ordinal"])
            self.place, self.error = 0, None
            self.asked = {}
            return [self._lifecycle("running", now_ms)]
        chunk = GraphChunk.of(event)
        if chunk is not None:
            return self._chunk(chunk, now_ms)
        if event.event == "chat-error":
            message = event.data.get("message") if isinstance(event.data, dict) else None
            return [self._lifecycle("failed", now_ms, error=self.error or str(message or "failed"))]
        if event.event == "end":
            status = event.data.get("status") if isinstance(event.data, dict) else None
            return self._ended(str(status), now_ms)
        return []

    def _chunk(self, chunk: GraphChunk, now_ms: int) -> list[Event]:
        ns = list(chunk.namespace)
        if chunk.mode == "error":
            data = chunk.data if isinstance(chunk.data, dict) else {}
            self.error = f"{data.get('error', 'Error')}: {data.get('message', '')}"
            return []
        if chunk.mode in _PLAIN:
            return [self._event(chunk.mode, ns, chunk.data, now_ms)]
        if chunk.mode != PROTOCOL_MODE or not isinstance(chunk.data, dict):
            return []
        for interrupt in chunk.data.get("interrupts") or ():
            iid = interrupt.get("id") if isinstance(interrupt, dict) else None
            if isinstance(iid, str):
                self.asked.setdefault(iid, (ns, interrupt.get("value")))
        return [self._event(str(chunk.data.get("method")), ns, chunk.data.get("data"), now_ms)]

    def _ended(self, status: str, now_ms: int) -> list[Event]:
        said = _ENDED.get(status, "interrupted")
        if status == "waiting":  # asked once the run has ended: an answer then starts the next run
            asked = [
                self._event("input.requested", ns, {"interrupt_id": i, "payload": v}, now_ms) for i, (ns, v) in self.asked.items()
            ]
            return [*asked, self._lifecycle(said, now_ms)]
        if said == "failed" or status == "cancelled":  # a cancelled run ends: no answer starts it again
            return [self._lifecycle("failed", now_ms, error=self.error or ("cancelled" if status == "cancelled" else "failed"))]
        return [self._lifecycle(said, now_ms)]

    def _lifecycle(self, said: str, now_ms: int, error: str | None = None) -> Event:
        data: dict[str, Any] = {"event": said}
        if error is not None:
            data["error"] = error
        return self._event("lifecycle", [], data, now_ms)

    def _event(self, method: str, namespace: list[str], data: Any, now_ms: int) -> Event:
        self.place += 1
        return {
            "type": "event",
            "event_id": f"{self.run_id}:{self.place}",
            "seq": self.ordinal * SEQ_PER_RUN + self.place,
            "method": method,
            "params": {"namespace": namespace, "timestamp": now_ms, "data": data},
        }
