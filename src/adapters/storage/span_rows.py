"""A span as a row, shared by the SQL stores: the columns in order, and back. `attributes`
is a JSON object; a list in it is a tuple of strings (OpenTelemetry's string arrays)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from domain.traces import Attribute, PendingSpan, SpanKind, SpanRecord, SpanStatus

COLUMNS = "span_id, trace_id, parent_id, conversation_id, run_id, kind, name, started, ended, status, attributes"


def span_row(span: SpanRecord) -> tuple[object, ...]:
    return (
        span.span_id,
        span.trace_id,
        span.parent_id,
        span.conversation_id,
        span.run_id,
        span.kind.value,
        span.name,
        span.started,
        span.ended,
        span.status.value,
        attributes_json(span.attributes),
    )


def attributes_json(attributes: dict[str, Attribute]) -> str:
    return json.dumps(attributes, ensure_ascii=False, separators=(",", ":"))


def _attributes(text: str) -> dict[str, Attribute]:
    raw: dict[str, Any] = json.loads(text)
    return {k: tuple(str(x) for x in v) if isinstance(v, list) else v for k, v in raw.items()}


def span_of(row: tuple[Any, ...]) -> SpanRecord:
    sid, tid, parent, cid, rid, kind, name, started, ended, status, attributes = row[:11]
    return SpanRecord(
        sid, tid, parent, cid, rid, SpanKind(kind), name, int(started), None if ended is None else int(ended),
        SpanStatus(status), _attributes(attributes),
    )  # fmt: skip


def pending_of(row: tuple[Any, ...]) -> PendingSpan:
    """A row of COLUMNS followed by the run's status and end (ISO text, a datetime or None)."""
    run_status, finished = row[11], row[12]
    if isinstance(finished, str):
        finished = datetime.fromisoformat(finished)
    return PendingSpan(span_of(row), run_status, int(finished.timestamp() * 1e9) if finished is not None else None)
