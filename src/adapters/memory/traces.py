"""SpanStore in memory, beside the memory run store whose runs it reads."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace

from domain.traces import Attribute, PendingSpan, SpanEnd, SpanKind, SpanRecord, SpanStatus, ready
from ports.runs import RunRepository
from ports.traces import SpanStore


@dataclass
class _Row:
    span: SpanRecord
    seq: int
    acked: bool = False
    claimed_until: float = 0.0


class InMemorySpanStore(SpanStore):
    def __init__(self, runs: RunRepository) -> None:
        self._runs = runs
        self._lock = threading.Lock()
        self._rows: dict[str, _Row] = {}

    async def record(self, spans: Sequence[SpanRecord]) -> None:
        with self._lock:
            for span in spans:
                self._rows.setdefault(span.span_id, _Row(span, len(self._rows)))

    async def end(self, span_id: str, ended: int, status: SpanStatus, attributes: dict[str, Attribute]) -> None:
        self.end_now(SpanEnd(span_id, ended, status, attributes))

    def end_now(self, end: SpanEnd) -> None:
        with self._lock:
            row = self._rows.get(end.span_id)
            if row is None or row.acked or row.span.ended is not None:
                return
            row.span = replace(row.span, ended=end.ended, status=end.status, attributes={**row.span.attributes, **end.attributes})

    async def latest_run_span(self, conversation_id: str) -> SpanRecord | None:
        with self._lock:
            found = [
                r for r in self._rows.values() if r.span.conversation_id == conversation_id and r.span.kind is SpanKind.AGENT
            ]
        return max(found, key=lambda r: (r.span.started, r.seq)).span if found else None

    async def claim(self, owner: str, now: float, lease: float, limit: int) -> Sequence[PendingSpan]:
        with self._lock:
            candidates = sorted((r for r in self._rows.values() if not r.acked and r.claimed_until <= now), key=lambda r: r.seq)
        claimed: list[PendingSpan] = []
        for row in candidates:
            run = await self._runs.get_run(row.span.run_id)
            finished = int(run.finished_at.timestamp() * 1e9) if run is not None and run.finished_at else None
            pending = PendingSpan(row.span, run.status.value if run is not None else None, finished)
            if not ready(pending):
                continue
            with self._lock:
                if row.acked or row.claimed_until > now:
                    continue
                row.claimed_until = now + lease
            claimed.append(replace(pending, span=row.span))
            if len(claimed) >= limit:
                break
        return claimed

    async def acknowledge(self, span_ids: Sequence[str]) -> None:
        with self._lock:
            for span_id in span_ids:
                if span_id in self._rows:
                    self._rows[span_id].acked = True

    async def prune(self, before: int) -> int:
        with self._lock:
            old = [k for k, r in self._rows.items() if r.acked and r.span.started < before]
            for k in old:
                del self._rows[k]
        return len(old)

    async def unacknowledged(self) -> int:
        with self._lock:
            return sum(1 for r in self._rows.values() if not r.acked)
