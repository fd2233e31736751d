"""UsageStore and AuditLog in memory: plain structures behind a lock, gone when the process exits."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from datetime import date, datetime

from adapters.memory.traces import InMemorySpanStore
from domain.audit import AuditEntry
from domain.traces import SpanEnd
from domain.usage import Cost, UsageRow
from ports.audit import AuditLog
from ports.usage import UsageStore


class InMemoryUsageStore(UsageStore):
    """`spans`: the backend's span store, where a span given to `add` is ended."""

    def __init__(self, spans: InMemorySpanStore | None = None) -> None:
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, str, date], UsageRow] = {}
        self._spans = spans

    async def add(self, user: str, model: str, day: date, cost: Cost, span: SpanEnd | None = None) -> None:
        if span is not None and self._spans is not None:
            self._spans.end_now(span)
        with self._lock:
            row = self._rows.get((user, model, day)) or UsageRow(user, model, day, 0, 0, 0.0, 0.0, 0)
            self._rows[(user, model, day)] = UsageRow(
                user,
                model,
                day,
                row.input_tokens + cost.input_tokens,
                row.output_tokens + cost.output_tokens,
                row.model_seconds + cost.model_seconds,
                row.tool_seconds + cost.tool_seconds,
                row.calls + cost.calls,
                row.estimated_calls + (cost.calls if cost.estimated else 0),
            )

    async def rows(self, user: str | None, first: date, last: date) -> Sequence[UsageRow]:
        with self._lock:
            kept = [r for (u, _, d), r in self._rows.items() if first <= d <= last and (user is None or u == user)]
        return sorted(kept, key=lambda r: (r.day, r.user, r.model))

    async def tokens(self, user: str, day: date) -> int:
        with self._lock:
            return sum(r.tokens for (u, _, d), r in self._rows.items() if u == user and d == day)


class InMemoryAuditLog(AuditLog):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[AuditEntry] = []
        self._seq = 0

    async def append(self, entry: AuditEntry) -> None:
        with self._lock:
            self._seq += 1
            self._entries.append(dataclasses.replace(entry, seq=self._seq))

    async def entries(self, since: datetime | None, limit: int) -> Sequence[AuditEntry]:
        with self._lock:
            return [e for e in self._entries if since is None or e.at >= since][:limit]

    async def prune(self, before: datetime) -> int:
        with self._lock:
            kept = [e for e in self._entries if e.at >= before]
            removed, self._entries = len(self._entries) - len(kept), kept
            return removed
