"""Asking before acting: which tool calls need a person's approval, the decisions a person
gives (approve, edit, reject; retry or skip for an unknown outcome) and what a resume
does with them. Rules over plain values; ApprovalGate applies them for the agent.

A gated call never starts: its request is stored, the run ends `waiting`, and the call
stays pending in the thread's latest checkpoint (so the conversation is resumable by the
usual rule). A decision is stored before anything runs, so a crash after it loses nothing.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from domain.errors import DecisionRequired, InvalidInput, StaleDecision
from domain.model import AssistantMessage, Message, PendingCall, ToolCall, utc_now
from domain.tools import ToolSpec

SEP = "__"  # `<server>__<tool>`, as the toolbox names tools


@dataclass(frozen=True)
class AllowRule:
    tool: str  # `<server>__<tool>`
    since: datetime


class ApprovalMode(StrEnum):
    OFF = "off"  # never ask
    UNSAFE = "unsafe"  # ask for destructive, non-idempotent, non-read-only tools (the default)
    ALL = "all"  # ask for every tool call


def parse_mode(value: object) -> ApprovalMode:
    try:
        return ApprovalMode(str(value).strip().lower())
    except ValueError:
        raise InvalidInput(f"TOOL_APPROVAL must be off, unsafe or all, got {value!r}") from None


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def needs_approval(mode: ApprovalMode, spec: ToolSpec | None, always: Collection[str]) -> bool:
    """Whether a call of the tool waits for a person. `off` never asks; a tool its
    server's `approve` globs name always asks; one the user always allows, or its
    server's `autoApprove` globs name, never asks; `all` asks for the rest; `unsafe` asks
    for tools annotated (or defaulting, per MCP) destructive, non-idempotent and not
    read-only. A tool not (yet) listed is presumed unsafe, as MCP's defaults say: its
    server may merely be slow to start."""
    if mode is ApprovalMode.OFF:
        return False
    if spec is None:
        return True
    short = spec.name.partition(SEP)[2] or spec.name
    if _matches(short, spec.approve):
        return True
    if spec.name in always or _matches(short, spec.auto_approve):
        return False
    return mode is ApprovalMode.ALL or spec.unsafe_to_repeat


# --- decisions ---------------------------------------------------------------------------


class DecisionType(StrEnum):
    APPROVE = "approve"
    EDIT = "edit"
    REJECT = "reject"
    RETRY = "retry"  # an unknown outcome: send the call again
    SKIP = "skip"  # an unknown outcome: do not send it again

    @property
    def answers_approval(self) -> bool:
        return self in (DecisionType.APPROVE, DecisionType.EDIT, DecisionType.REJECT)


@dataclass(frozen=True)
class Decision:
    type: DecisionType
    args: dict[str, Any] | None = None  # edit: the arguments to run the call with
    message: str | None = None  # reject: the reason the model is given
    always: bool = False  # approve: and never ask again for this tool


MAX_REASON = 2000


def parse_decision(raw: object) -> Decision:
    if not isinstance(raw, dict):
        raise InvalidInput('Each decision must be an object with a "type"')
    unknown = sorted(set(raw) - {"type", "args", "message", "always"})
    if unknown:
        raise InvalidInput(f"Unknown decision field(s): {', '.join(unknown)}")
    try:
        kind = DecisionType(str(raw.get("type")))
    except ValueError:
        raise InvalidInput('A decision\'s type must be "approve", "edit", "reject", "retry" or "skip"') from None
    if kind is DecisionType.EDIT and not isinstance(raw.get("args"), dict):
        raise InvalidInput('An "edit" decision needs "args", an object')
    if kind is not DecisionType.EDIT and "args" in raw:
        raise InvalidInput('Only an "edit" decision takes "args"')
    message = raw.get("message")
    if message is not None and (not isinstance(message, str) or len(message) > MAX_REASON):
        raise InvalidInput(f"A decision's message must be a string of at most {MAX_REASON} characters")
    always = raw.get("always", False)
    if not isinstance(always, bool) or (always and kind is not DecisionType.APPROVE):
        raise InvalidInput('"always" is a boolean, for an "approve" decision only')
    args = dict(raw["args"]) if kind is DecisionType.EDIT else None
    return Decision(kind, args, message.strip() if isinstance(message, str) else None, always)


def parse_decisions(raw: object) -> dict[str, Decision]:
    """The `decisions` field of a resume: tool call id -> decision; InvalidInput otherwise."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not raw:
        raise InvalidInput("decisions must be a non-empty object mapping tool call ids to decisions")
    try:  # a lone surrogate ("\ud800") fits JSON but no UTF-8 store
        json.dumps(raw, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("decisions are not valid Unicode (a lone surrogate)") from None
    out: dict[str, Decision] = {}
    for call_id, decision in raw.items():
        if not isinstance(call_id, str) or not call_id:
            raise InvalidInput("decisions must be keyed by tool call id")
        out[call_id] = parse_decision(decision)
    return out


@dataclass(frozen=True)
class ApprovalRequest:
    """A gated tool call waiting for (or given) a decision; one per conversation and call."""

    conversation_id: str
    call: ToolCall
    run_id: str | None
    server: str
    description: str
    schema: Mapping[str, Any] = field(default_factory=dict)  # the tool's input schema
    requested_at: datetime = field(default_factory=utc_now)
    decision: Decision | None = None
    decided_at: datetime | None = None


def waiting(requests: Sequence[ApprovalRequest], pending: Sequence[PendingCall]) -> tuple[ApprovalRequest, ...]:
    """The requests still waiting for a person: undecided, their call still pending."""
    ids = {p.call.id for p in pending}
    return tuple(r for r in requests if r.decision is None and r.call.id in ids)


def decided_on(requests: Sequence[ApprovalRequest], messages: Sequence[Message]) -> tuple[ApprovalRequest, ...]:
    """The requests with a decision whose call is among `messages`' tool calls (a call of
    another branch is not shown on this one)."""
    calls = {c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls}
    return tuple(r for r in requests if r.decision is not None and r.call.id in calls)


@dataclass(frozen=True)
class ResumeDecisions:
    """What a resume's decisions come to: those to store for approval requests, and the
    unknown-outcome calls to skip."""

    approvals: dict[str, Decision]
    skip: frozenset[str]
    unknown_answered: bool  # the old `decision` field, or a retry/skip for every unknown call


def plan_decisions(
    decisions: Mapping[str, Decision],
    legacy: str | None,  # the old `decision` field: retry or skip every unknown outcome
    pending: Sequence[PendingCall],
    requests: Sequence[ApprovalRequest],
    check_args: Callable[[Mapping[str, Any], Mapping[str, Any]], str | None],
) -> ResumeDecisions:
    """Check a resume's decisions against what is waiting. A decision naming a call that
    is not waiting for it (answered already, a stale page, a double click) → StaleDecision
    and nothing is stored; edited args that break the tool's schema → InvalidInput; a
    resume that answers nothing while calls wait for approval (no decision at all, or only the
    old `decision` field with no unknown outcome to apply it to) → DecisionRequired: it
    would only stop at the same question again."""
    open_requests = {r.call.id: r for r in waiting(requests, pending)}
    unknown = {p.call.id for p in pending if p.needs_decision}
    approvals: dict[str, Decision] = {}
    skip: set[str] = set()
    for call_id, d in decisions.items():
        if d.type.answers_approval:
            request = open_requests.get(call_id)
            if request is None:
                raise StaleDecision(f"Tool call {call_id} is not waiting for approval (answered already?)")
            if d.type is DecisionType.EDIT and d.args is not None:
                problem = check_args(request.schema, d.args)
                if problem is not None:
                    raise InvalidInput(f"The edited arguments of {request.call.name} do not fit its input schema: {problem}")
            approvals[call_id] = d
        else:
            if call_id not in unknown:
                raise StaleDecision(f"Tool call {call_id} is not waiting for a retry or skip decision")
            if d.type is DecisionType.SKIP:
                skip.add(call_id)
    if legacy == "skip":
        skip |= unknown - set(decisions)
    answered = {c for c, d in decisions.items() if not d.type.answers_approval}
    unknown_answered = legacy is not None or (bool(unknown) and unknown <= answered)
    answers_something = bool(decisions) or (legacy is not None and bool(unknown))
    if open_requests and not answers_something:
        raise DecisionRequired(waiting_message(len(open_requests)))
    return ResumeDecisions(approvals, frozenset(skip), unknown_answered)


def waiting_message(count: int) -> str:
    calls = "a tool call waits" if count == 1 else f"{count} tool calls wait"
    return f"{calls} for approval: approve, edit or reject first (sophos approve, or decisions in the resume)"


# --- what a decided call becomes ----------------------------------------------------------


@dataclass(frozen=True)
class RunCall:
    """Run the call with `args`; `edited` when a person changed them."""

    args: dict[str, Any]
    edited: bool = False


@dataclass(frozen=True)
class Rejected:
    """Do not run the call; the model gets `content` as its (error) result."""

    content: str


@dataclass(frozen=True)
class Wait:
    """Do not run the call: it waits for a person."""

    request: ApprovalRequest


Verdict = RunCall | Rejected | Wait


def rejection(message: str | None) -> str:
    reason = message or "no reason given"
    return f"Rejected: the user did not allow this tool call. Reason: {reason}"


def edited_note(args: Mapping[str, Any], content: str) -> str:
    return f"Note: the user edited the arguments before this call ran; it ran with {json.dumps(args)}.\n{content}"


def decided(request: ApprovalRequest) -> Verdict:
    """What a call whose request has a decision does: runs (as asked, or with the edited
    args) or gives the model the rejection."""
    d = request.decision
    if d is None:
        return Wait(request)
    if d.type is DecisionType.REJECT:
        return Rejected(rejection(d.message))
    if d.type is DecisionType.EDIT and d.args is not None:
        return RunCall(dict(d.args), edited=True)
    return RunCall(dict(request.call.args))


def decision_to_dict(d: Decision) -> dict[str, Any]:
    """A decision as stored (JSON) and shown."""
    out: dict[str, Any] = {"type": d.type.value}
    if d.args is not None:
        out["args"] = d.args
    if d.message is not None:
        out["message"] = d.message
    if d.always:
        out["always"] = True
    return out


def decision_from_dict(raw: Mapping[str, Any]) -> Decision:
    return Decision(DecisionType(raw["type"]), raw.get("args"), raw.get("message"), bool(raw.get("always")))
