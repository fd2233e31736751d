"""The torture test's trace checks (`--traces`, issue 47): after every kill and restart, each
model request the fake model logged and each tool execution the ledger logged has one span at
the receiver, every recorded span reached it, none lacks its parent, and a span id received
twice (a lost acknowledgement) is the same span both times."""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan


def recorded_ids(db: Path, url: str) -> set[str]:
    if url:
        import psycopg

        with psycopg.connect(url) as conn:
            return {r[0] for r in conn.execute("SELECT span_id FROM trace_spans")}
    conn = sqlite3.connect(db)
    try:
        return {r[0] for r in conn.execute("SELECT span_id FROM trace_spans")}
    finally:
        conn.close()


def wait_shipped(receiver: OtlpReceiver, db: Path, url: str, timeout: float = 60.0) -> set[str]:
    """The recorded span ids the receiver still lacks after `timeout` (a live server ships)."""
    deadline = time.monotonic() + timeout
    while True:
        missing = recorded_ids(db, url) - {s.span_id for s in receiver.snapshot()}
        if not missing or time.monotonic() > deadline:
            return missing
        time.sleep(0.2)


def interrupted(span: ReceivedSpan) -> bool:
    return span.attributes.get("sophos.interrupted") is True


def comparable(span: ReceivedSpan) -> ReceivedSpan:
    """The span as recorded: its resource less `service.instance.id`, which names the process
    that sent it (the SDK draws one per process), and a resend may come from another."""
    return replace(span, resource={k: v for k, v in span.resource.items() if k != "service.instance.id"})


def trace_violations(spans: list[ReceivedSpan], model_requests: int, executions: Counter[str], missing: set[str]) -> list[str]:
    found: list[str] = [f"{len(missing)} recorded span(s) never reached the receiver"] if missing else []
    first: dict[str, ReceivedSpan] = {}
    for s in spans:
        seen = first.setdefault(s.span_id, s)
        if comparable(seen) != comparable(s):
            differ = [k for k, v in vars(comparable(s)).items() if vars(comparable(seen))[k] != v]
            found.append(f"span {s.span_id} was received twice with different {differ}: {seen} then {s}")
    unique = list(first.values())
    ids = set(first)
    found += [
        f"span {s.span_id} ({s.name}) has no parent at the receiver" for s in unique if s.parent_id and s.parent_id not in ids
    ]
    chats = [s for s in unique if s.name.startswith("chat ")]
    # a span is recorded before its request is sent: a kill in between leaves an interrupted
    # span with no request, never a request with no span
    if not len([s for s in chats if not interrupted(s)]) <= model_requests <= len(chats):
        found.append(f"{model_requests} model request(s) but {len(chats)} chat span(s)")
    tools: dict[str, list[ReceivedSpan]] = {}
    for s in unique:
        if s.name.startswith("execute_tool "):
            key = f"{s.attributes['gen_ai.conversation.id']}:{s.attributes['gen_ai.tool.call.id']}"
            tools.setdefault(key, []).append(s)
    for key, n in executions.items():
        spans_of = tools.get(key, [])
        if not len([s for s in spans_of if not interrupted(s)]) <= n <= len(spans_of):
            found.append(f"{key}: {n} execution(s) but {len(spans_of)} span(s)")
    return found
