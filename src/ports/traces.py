"""SpanStore: the trace spans recorded with the work they describe; SpanSink: where they go
(an OTLP receiver). Issue 47 items 1 and 2."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Protocol

from domain.traces import Attribute, PendingSpan, SpanRecord, SpanStatus


class SpanStore(Protocol):
    """Spans by id. Every method takes effect for all processes sharing the store as soon as
    it returns (durably, on a durable backend)."""

    @abstractmethod
    async def record(self, spans: Sequence[SpanRecord]) -> None:
        """Store `spans` in one write, before the work they describe starts. Idempotent: a
        span whose id is stored already is left as it is. Durable against a crash of the
        process when it returns; a store may leave the flush to disk to its next synced
        write (a power cut may then lose the last spans, never a process crash)."""

    @abstractmethod
    async def end(self, span_id: str, ended: int, status: SpanStatus, attributes: dict[str, Attribute]) -> None:
        """End a stored span, adding `attributes`. Nothing happens to a span that ended, was
        acknowledged, or is unknown."""

    @abstractmethod
    async def latest_run_span(self, conversation_id: str) -> SpanRecord | None:
        """The conversation's most recently started run span (kind AGENT), None for none:
        what a resumed run joins. Only reads."""

    @abstractmethod
    async def claim(self, owner: str, now: float, lease: float, limit: int) -> Sequence[PendingSpan]:
        """At most `limit` spans not yet acknowledged and ready to ship (domain.traces.ready),
        with their run's state, claimed for `owner` until `now` + `lease` (Unix seconds): no
        other claim returns them before then, in this process or another; after it (the
        claimant died, or its acknowledgement was lost) they are claimed again. Oldest first."""

    @abstractmethod
    async def acknowledge(self, span_ids: Sequence[str]) -> None:
        """The receiver has these spans: never claimed again."""

    @abstractmethod
    async def prune(self, before: int) -> int:
        """Delete the acknowledged spans that started before `before` (Unix ns); how many.
        A run resumed after that starts a trace of its own."""

    @abstractmethod
    async def unacknowledged(self) -> int:
        """How many spans wait to be shipped (ready or not). Only reads."""


class SpanSink(Protocol):
    """A trace receiver."""

    @abstractmethod
    async def send(self, spans: Sequence[SpanRecord]) -> bool:
        """Send ended spans with their ids; True once the receiver acknowledged them, False
        when it did not (unreachable, refused, or the answer was lost: they are sent again)."""

    @abstractmethod
    async def aclose(self) -> None:
        """Release the connection; idempotent."""
