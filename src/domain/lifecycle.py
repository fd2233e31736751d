"""The run lifecycle as rules over plain values: the state machine, what outcome a stop
or a failure gives, what recovery concludes from a thread head, what a resume or a new
message needs, when a run may be reclaimed and when an orphan is adopted.

The services (services.runs, services.supervisor) only orchestrate: every decision is here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from domain.errors import (
    AnswerTooLong,
    DecisionRequired,
    ErrorCode,
    InvalidTransition,
    RunLost,
    RunNotResumable,
    StorageFailure,
    to_chat_error,
)
from domain.events import StreamEvent
from domain.model import (
    PendingCall,
    Run,
    RunError,
    RunOwner,
    RunStatus,
    RunTrigger,
    ThreadHead,
    ToolCall,
    ToolResult,
)

# --- identities --------------------------------------------------------------------------


def idempotency_key(conversation_id: str, tool_call_id: str) -> str:
    """The key a tool call carries to its server and into the journal: stable across
    replays of the step, unique per call."""
    return f"{conversation_id}:{tool_call_id}"


def conversation_of_key(key: str) -> str:
    """The conversation of an idempotency key (a conversation id holds no colon)."""
    return key.partition(":")[0]


def own_call_ids(calls: Sequence[ToolCall], new_id: Callable[[], str]) -> tuple[ToolCall, ...]:
    """The calls of a model's reply, each with an id of our own, unique in the conversation;
    the model's id is kept as `model_id`. Model servers number calls per response (`call_0`
    in every turn), send one id twice or none at all, while an approval and an idempotency
    key are found by the call's id: a reused id would answer a later call with an earlier
    decision, or make a server that honours keys skip a real call."""
    return tuple(replace(c, id=new_id(), model_id=c.model_id or c.id or None) for c in calls)


# --- the state machine -------------------------------------------------------------------

TRANSITIONS: dict[RunStatus, frozenset[RunStatus]] = {
    RunStatus.RUNNING: frozenset(
        {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.INTERRUPTED, RunStatus.CANCELLED, RunStatus.WAITING}
    ),
    # waiting for approval: the next step is a new run (a resume with decisions)
    RunStatus.WAITING: frozenset(),
    # automatic resumes gave up on an orphan: the interruption becomes a failure
    RunStatus.INTERRUPTED: frozenset({RunStatus.FAILED}),
    RunStatus.COMPLETED: frozenset(),
    RunStatus.FAILED: frozenset(),
    RunStatus.CANCELLED: frozenset(),
}


def can_transition(current: RunStatus, target: RunStatus) -> bool:
    return target in TRANSITIONS[current]


@dataclass(frozen=True)
class Transition:
    """A run's move from `source` to `target`, one of TRANSITIONS (an instance cannot hold
    any other). Stores apply it as a compare-and-set: the run changes only while its
    stored status is still `source`, so the table is what every store enforces."""

    source: RunStatus
    target: RunStatus

    def __post_init__(self) -> None:
        if not can_transition(self.source, self.target):
            raise InvalidTransition(f"A run cannot go from {self.source.value} to {self.target.value}")


def transition(current: Run | RunStatus, target: RunStatus) -> Transition:
    """The transition of a run (or from a status) to `target`; InvalidTransition if the
    table does not allow it."""
    return Transition(current.status if isinstance(current, Run) else current, target)


def finishing(target: RunStatus) -> Transition:
    """A running run's outcome being recorded."""
    return Transition(RunStatus.RUNNING, target)


# automatic resumes gave up on an orphan
GIVE_UP = Transition(RunStatus.INTERRUPTED, RunStatus.FAILED)


class StopReason(StrEnum):
    """Why a run's local task was stopped before the agent finished."""

    CANCEL = "cancel"  # a person asked (API cancel, Ctrl-C): recorded `cancelled`
    SHUTDOWN = "shutdown"  # the process drains or exits: `interrupted`, adoptable
    LOST = "lost"  # another process took the run over: nothing is recorded by this one
    STEER = "steer"  # a steering message waits: the run ended at a step boundary, or in a text answer, and hands over


@dataclass(frozen=True)
class Outcome:
    """How a run ended, as this process saw it. `recorded` False: the outcome belongs to
    whoever took the run over, this process writes nothing."""

    status: RunStatus
    error: RunError | None = None
    recorded: bool = True


LOST_ERROR = RunError(ErrorCode.RUN_LOST.value, RunLost.default_message)
INPUT_NOT_RECORDED = RunError(
    ErrorCode.INPUT_NOT_RECORDED.value,
    "The run stopped before its message was saved; send the message again.",
)
ADOPTION_ATTEMPTS = 3
ADOPTION_FAILED = RunError(
    ErrorCode.ADOPTION_FAILED.value,
    f"Resumed automatically {ADOPTION_ATTEMPTS} times without finishing; resume it by hand to retry.",
)


def outcome_of(failure: BaseException | None, stop: StopReason | None, waiting: bool = False, cut: bool = False) -> Outcome:
    """The outcome of a run whose task ended with `failure` (None: the agent finished, or
    stopped before calls that wait for approval when `waiting`) or was stopped for `stop`.

    `cut`: an answer of the run reached MODEL_MAX_TOKENS. Its text is stored as the step's
    reply, so the agent finished, but not as the model meant to: the run fails with
    ANSWER_TOO_LONG (the code says why the answer ends mid-sentence, and the conversation
    goes on from the kept text). A stop or another failure says more and wins."""
    if isinstance(failure, RunLost) or stop is StopReason.LOST:
        return Outcome(RunStatus.INTERRUPTED, LOST_ERROR, recorded=False)
    if stop is StopReason.STEER and failure is None:
        # ended between two steps with every call answered: its part is done, and the
        # steering message starts in the same transaction (domain.queue)
        return Outcome(RunStatus.COMPLETED)
    if stop is StopReason.CANCEL:
        return Outcome(RunStatus.CANCELLED)
    if stop is StopReason.SHUTDOWN:
        return Outcome(RunStatus.INTERRUPTED)
    if failure is None and cut:
        failure = AnswerTooLong()
    if failure is None:
        return Outcome(RunStatus.WAITING if waiting else RunStatus.COMPLETED)
    code, message = to_chat_error(failure)
    return Outcome(RunStatus.FAILED, RunError(code.value, message))


def terminal_event(conversation_id: str, outcome: Outcome) -> StreamEvent:
    """The last event of a run's stream: `chat-error` for an error, else `end`."""
    if outcome.error is not None and (outcome.status is RunStatus.FAILED or not outcome.recorded):
        data = {"code": outcome.error.code, "message": outcome.error.message, "conversation": conversation_id}
        return StreamEvent("chat-error", data)
    return StreamEvent("end", {"conversation": conversation_id, "status": outcome.status.value})


# --- a stopped answer ----------------------------------------------------------------------


def keeps_stopped_text(stop: StopReason | None, text: str, head: ThreadHead, failure: BaseException | None = None) -> bool:
    """Whether the text a stopped step streamed is added to the thread: only when a person
    stopped it, a steer cut it (domain.queue.model_writing: the steering message follows
    it) or the model failed mid-answer (a dropped or stalled stream: the text is what
    the person saw, and a retry goes on after it), it said something, and the step's own
    output is not saved (the head still waits for the agent; after it the step's answer or
    tool calls are in the thread). A shutdown's step runs again instead, and a run whose
    storage failed or that was lost cannot write."""
    failed = stop is None and failure is not None and not isinstance(failure, (RunLost, StorageFailure))
    person = stop in (StopReason.CANCEL, StopReason.STEER)
    return (person or failed) and bool(text) and head.work_left and not head.awaiting_tools


# --- ownership -----------------------------------------------------------------------------


def reclaimable(run: Run, me: RunOwner, executing_here: bool, owner_alive: bool | None) -> bool:
    """May a process reclaim this `running` run (record it stopped)? Never a run it
    executes; a run of its own instance that it no longer executes; a run whose owner is
    known dead; a run whose lease expired by the store's clock (the owner may be paused:
    fencing stops it writing anything more)."""
    if run.status is not RunStatus.RUNNING or executing_here:
        return False
    owner = run.owner
    if owner is None:
        return True  # written before runs had owners: a single-process database
    if owner.instance and owner.instance == me.instance:
        return True
    if owner_alive is False:
        return True
    return run.lease_expired


def recovery_verdict(run: Run, head: ThreadHead) -> Outcome:
    """What a reclaimed run's thread says about it: its final checkpoint is written (the
    outcome was not) → completed; no work left and the head is not its own → its message
    was never recorded; otherwise → interrupted, resumable from the head."""
    if not head.work_left and head.run_id == run.id:
        return Outcome(RunStatus.COMPLETED)
    if not head.work_left:
        return Outcome(RunStatus.INTERRUPTED, INPUT_NOT_RECORDED)
    return Outcome(RunStatus.INTERRUPTED)


def input_saved(run: Run, head: ThreadHead) -> bool:
    """Whether a reclaimed run's own message reached the thread (as a checkpoint of the
    run, or as pending input on the checkpoint before it): the recovery verdict's
    INPUT_NOT_RECORDED, turned around. A queued message whose run stopped without it goes
    back to the queue; one that arrived must never be sent twice."""
    return recovery_verdict(run, head).error != INPUT_NOT_RECORDED


# --- resume, new message, adoption --------------------------------------------------------


def resume_plan(head: ThreadHead, pending: Sequence[PendingCall], decision: str | None) -> frozenset[str]:
    """The pending calls a resume must skip. Raises RunNotResumable when no work is left,
    DecisionRequired when a call that may have taken effect is pending and no decision
    (retry or skip) was given."""
    if not head.work_left:
        raise RunNotResumable()
    unknown = [p for p in pending if p.needs_decision]
    if unknown and decision is None:
        raise DecisionRequired()
    if decision == "skip":
        return frozenset(p.call.id for p in unknown)
    return frozenset()


NOT_RUN = "Not run: the step that requested this call was abandoned for a new message."
OUTCOME_UNKNOWN = "Outcome unknown: this call was sent before the run stopped and its result was not saved; it was not run again."


def settle_plan(pending: Sequence[PendingCall]) -> tuple[ToolResult, ...]:
    """The results that close an abandoned step's pending calls when a new message is sent
    instead of a resume. The transcript never lies: a call the journal shows as sent is
    never "not run"; one that may have taken effect and is unsafe to repeat needs the
    user's decision first (DecisionRequired)."""
    if any(p.needs_decision for p in pending):
        raise DecisionRequired()
    return tuple(ToolResult(OUTCOME_UNKNOWN if p.started else NOT_RUN, p.call.id, p.call.name, "error") for p in pending)


def base_count(head: ThreadHead, closings: int, new_message: bool) -> int:
    """The thread's length before the run's output: what precedes it on a page that
    replays the run's stream."""
    return head.message_count + closings + (1 if new_message else 0)


class Adoption(StrEnum):
    ADOPT = "adopt"
    GIVE_UP = "give_up"
    LEAVE = "leave"


def adoption_verdict(recent: Sequence[Run], head: ThreadHead, pending: Sequence[PendingCall]) -> Adoption:
    """Should a live process resume this orphan (AUTO_RESUME)? `recent` are the
    conversation's latest runs, newest first, the first being interrupted. Only work a
    resume can do without a person: no decision pending. After ADOPTION_ATTEMPTS adopted
    runs in a row that did not finish, give up with a clear error instead of looping."""
    if not recent or recent[0].status is not RunStatus.INTERRUPTED or not head.work_left:
        return Adoption.LEAVE
    if recent[0].error_code == ErrorCode.INPUT_NOT_RECORDED.value:
        return Adoption.LEAVE
    if any(p.needs_decision for p in pending):
        return Adoption.LEAVE
    return restart_verdict(recent)


def restart_verdict(recent: Sequence[Run]) -> Adoption:
    """Adopt the conversation's latest run (a hosted graph's whose input never reached its
    thread starts again, services.hosted) unless ADOPTION_ATTEMPTS adopted runs in a row
    did not finish: then give up."""
    attempts = 0
    for run in recent:
        if run.trigger is not RunTrigger.ADOPT:
            break
        attempts += 1
    return Adoption.GIVE_UP if attempts >= ADOPTION_ATTEMPTS else Adoption.ADOPT


def resumable(head: ThreadHead, active: bool) -> bool:
    """A conversation is resumable exactly when its latest checkpoint has work left and no
    run is active on it."""
    return head.work_left and not active
