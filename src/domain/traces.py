"""Trace spans of runs, model calls and tool calls (issue 47 items 1 and 2), as plain values.

A span is recorded in the database before the work it describes starts and ended when that
work ends; an exporter ships the recorded spans later, from any process, after a restart
too. Its ids are derived from the run and call ids, never drawn at random, so a span sent
again (its acknowledgement was lost) carries the ids it had. The names and attributes follow
OpenTelemetry's GenAI semantic conventions (`invoke_agent`, `chat {model}`,
`execute_tool {name}`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from enum import StrEnum

AGENT_NAME = "sophos"
INTERRUPTED = "sophos.interrupted"

Attribute = str | int | float | bool | tuple[str, ...]


class SpanKind(StrEnum):
    AGENT = "agent"  # invoke_agent: one per run
    CHAT = "chat"  # a model call
    TOOL = "tool"  # execute_tool: a tool call


class SpanStatus(StrEnum):
    UNSET = "unset"
    OK = "ok"
    ERROR = "error"


@dataclass(frozen=True)
class SpanRecord:
    """One span as stored. Times are Unix nanoseconds; `ended` None: the work has not ended
    (or was cut by a crash: `finish` decides once its run is no longer running)."""

    span_id: str  # 16 hex digits
    trace_id: str  # 32 hex digits
    parent_id: str | None
    conversation_id: str
    run_id: str
    kind: SpanKind
    name: str
    started: int
    ended: int | None = None
    status: SpanStatus = SpanStatus.UNSET
    attributes: dict[str, Attribute] = field(default_factory=dict)


@dataclass(frozen=True)
class SpanEnd:
    """The end of a recorded span: when, how, and the attributes it adds (SpanStore.end's
    arguments, as a value another write can carry: a model call's end goes with its usage row)."""

    span_id: str
    ended: int  # Unix ns
    status: SpanStatus
    attributes: dict[str, Attribute] = field(default_factory=dict)


@dataclass(frozen=True)
class PendingSpan:
    """A recorded span not yet acknowledged by the receiver, with its run's state as the
    store read it in the claim: `run_status` None when the run row is gone."""

    span: SpanRecord
    run_status: str | None
    run_finished: int | None  # Unix ns


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("\x1f".join(("sophos-trace", *parts)).encode()).digest()


def span_id(*parts: str) -> str:
    """A span id (64 bits, hex) derived from `parts`: the same parts, the same id."""
    raw = _digest("span", *parts)[:8]
    return (raw if any(raw) else b"\x01" * 8).hex()


def trace_id(conversation_id: str, first_run_id: str) -> str:
    """A trace id (128 bits, hex) of a turn: derived from its conversation and its first run,
    which every run resuming the turn finds recorded on the spans before it."""
    raw = _digest("trace", conversation_id, first_run_id)[:16]
    return (raw if any(raw) else b"\x01" * 16).hex()


def agent_span_id(run_id: str) -> str:
    return span_id(run_id, "invoke_agent")


def chat_span_id(run_id: str, step: int, index: int) -> str:
    """The model call `index` (0, 1, ...) of the run's step `step`."""
    return span_id(run_id, "chat", str(step), str(index))


def summary_span_id(run_id: str, step: int) -> str:
    """The model call that summarised the conversation's older messages at the run's `step`."""
    return span_id(run_id, "chat", "summary", str(step))


def title_span_id(run_id: str) -> str:
    """The model call that titled the conversation after the run (AUTO_TITLE)."""
    return span_id(run_id, "chat", "title")


def tool_span_id(run_id: str, call_id: str) -> str:
    return span_id(run_id, "execute_tool", call_id)


def ready(pending: PendingSpan) -> bool:
    """Whether a span can be shipped now: a run's span once the run is no longer running;
    a call's span once it ended, or once its run is no longer running (cut: interrupted)."""
    running = pending.run_status == "running"
    if pending.span.kind is SpanKind.AGENT:
        return not running
    return pending.span.ended is not None or not running


FAILED_RUNS = {"failed": "the run failed", "interrupted": "the run was interrupted"}


def finish(pending: PendingSpan) -> SpanRecord:
    """The span as it is sent: a run's span ends when its run ended, with its outcome; a call
    cut before it ended (a crash, a stop) ends at its run's end, or its own start when the run
    is gone, as an error marked `sophos.interrupted`. Only the stored values are read, so a
    span sent again is the same span."""
    span = pending.span
    end = pending.run_finished if pending.run_finished is not None else span.started
    if span.kind is SpanKind.AGENT:
        attributes = {**span.attributes, "sophos.run.status": pending.run_status or "unknown"}
        status = SpanStatus.ERROR if pending.run_status in FAILED_RUNS else SpanStatus.OK
        if pending.run_status == "interrupted":
            attributes[INTERRUPTED] = True
        return replace(span, ended=max(end, span.started), status=status, attributes=attributes)
    if span.ended is not None:
        return span
    attributes = {**span.attributes, INTERRUPTED: True, "error.type": "interrupted"}
    return replace(span, ended=max(end, span.started), status=SpanStatus.ERROR, attributes=attributes)


def status_message(span: SpanRecord) -> str | None:
    if span.status is not SpanStatus.ERROR:
        return None
    if span.attributes.get(INTERRUPTED) is True:
        return "interrupted: the process stopped before this ended"
    return str(span.attributes.get("error.type", "error"))
