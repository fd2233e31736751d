"""Pending tool calls: which were started (per the journal) and are unsafe to repeat, and
what a new run on the conversation starts from."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from domain import commands, lifecycle
from domain.approvals import Decision, plan_decisions, waiting, waiting_message
from domain.attachments import Upload
from domain.audit import Action
from domain.branches import edit_fork, regenerate_fork
from domain.errors import DecisionRequired, StaleDecision
from domain.model import PendingCall, ThreadHead
from ports.approvals import ApprovalStore, ArgsChecker
from ports.checkpoints import CheckpointPort
from ports.engine import Fork, NewMessage, Resume, RunInput
from ports.journal import ToolJournal
from services.audit import NO_AUDIT, AuditTrail


async def annotate_pending(pending: Iterable[PendingCall], journal: ToolJournal, conversation_id: str) -> tuple[PendingCall, ...]:
    """Mark the pending calls that were started (per the journal) and are unsafe to repeat."""
    calls = tuple(pending)
    if not calls:
        return calls
    keys = {p.call.id: lifecycle.idempotency_key(conversation_id, p.call.id) for p in calls}
    entries = await journal.entries(keys.values())
    out = []
    for p in calls:
        entry = entries.get(keys[p.call.id])
        out.append(PendingCall(p.call, started=entry is not None, unsafe=bool(entry and entry.unsafe)))
    return tuple(out)


@dataclass(frozen=True)
class PlanPorts:
    """What planning a run's input reads (and, for decisions, writes)."""

    checkpoints: CheckpointPort
    journal: ToolJournal
    approvals: ApprovalStore
    checker: ArgsChecker
    audit: AuditTrail = NO_AUDIT  # each decision and "always allow"


@dataclass(frozen=True)
class RunRequest:
    text: str
    resume: bool = False
    decision: str | None = None  # the old field: "retry" or "skip" for every unknown outcome
    decisions: Mapping[str, Decision] = field(default_factory=dict)
    files: tuple[Upload, ...] = ()


async def plan_input(
    ports: PlanPorts, conversation_id: str, request: RunRequest, now: datetime, new_thread: bool = False
) -> tuple[RunInput, int]:
    """What a run on the conversation starts from: a new message (closing the calls left
    pending, per the settle plan) or a resume (per the resume plan, after the decisions
    it carries are stored), with the thread's message count before the run's own messages.
    `new_thread`: the conversation was created by this request (its thread is empty)."""
    if new_thread and not request.resume:
        return NewMessage(request.text, new_thread=True, files=request.files), lifecycle.base_count(
            ThreadHead(), 0, new_message=True
        )
    head = await ports.checkpoints.head(conversation_id)
    pending: tuple[PendingCall, ...] = ()
    if head.awaiting_tools:
        thread = await ports.checkpoints.get_thread(conversation_id)
        pending = await annotate_pending(thread.pending_calls, ports.journal, conversation_id)
    requests = await ports.approvals.requests(conversation_id) if pending else ()
    if not request.resume:
        open_requests = waiting(requests, pending)
        if open_requests:
            raise DecisionRequired(waiting_message(len(open_requests)))
        closings = lifecycle.settle_plan(pending)
        return NewMessage(request.text, closings, files=request.files), lifecycle.base_count(
            head, len(closings), new_message=True
        )
    if not head.work_left:
        if request.decisions:  # answered already (a second tab, a double click)
            raise StaleDecision("Nothing waits for a decision: the conversation's last run finished")
        lifecycle.resume_plan(head, pending, request.decision)  # raises RunNotResumable
    plan = plan_decisions(request.decisions, request.decision, pending, requests, ports.checker.check)
    skip = lifecycle.resume_plan(
        head, pending, "retry" if plan.unknown_answered and request.decision is None else request.decision
    )
    if plan.approvals and not await ports.approvals.decide(conversation_id, plan.approvals, now):
        raise StaleDecision()  # another request answered them first
    for call_id, d in plan.approvals.items():
        name = next(r.call.name for r in requests if r.call.id == call_id)
        await ports.audit.record(Action.APPROVAL, conversation_id, f"{d.type.value} {name} ({call_id})")
        if d.always:
            await ports.approvals.allow_always(name, now, conversation_id)
            await ports.audit.record(Action.ALLOW_ALWAYS, name, conversation_id)
    return Resume(skip=skip | plan.skip), lifecycle.base_count(head, 0, new_message=False)


async def plan_fork(ports: PlanPorts, conversation_id: str, text: str, edit_of: int | None) -> tuple[RunInput, int]:
    """A run on a new branch: an edit of message `edit_of` (with `text`), or, when
    `edit_of` is None, a regenerate of the last answer; with the message count the run
    starts from. Refused while tool calls wait for approval, as a new message is."""
    thread = await ports.checkpoints.get_thread(conversation_id)
    if thread.pending_calls:
        open_requests = waiting(await ports.approvals.requests(conversation_id), thread.pending_calls)
        if open_requests:
            raise DecisionRequired(waiting_message(len(open_requests)))
    if edit_of is not None:
        at = edit_fork(thread.messages, edit_of)
        return Fork(at, text), at + 1
    at = regenerate_fork(thread.messages)
    return Fork(at, None), at


async def plan_command(
    ports: PlanPorts, command: commands.StartRun, conversation_id: str, files: tuple[Upload, ...], now: datetime
) -> tuple[RunInput, int]:
    """What the run `command` starts begins from: a new branch for an Edit or a Regenerate
    (plan_fork), else its message or its resume (plan_input); with the thread's message
    count before the run's output."""
    if isinstance(command, commands.Edit):
        return await plan_fork(ports, conversation_id, command.text, command.index)
    if isinstance(command, commands.Regenerate):
        return await plan_fork(ports, conversation_id, "", None)
    if isinstance(command, commands.Resume):
        request = RunRequest("", True, command.decision, command.decisions)
    else:
        request = RunRequest(command.text.strip(), files=files)
    return await plan_input(ports, conversation_id, request, now, new_thread=command.conversation_id is None)
