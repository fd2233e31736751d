"""What the run service takes in and hands out: the stores a run touches, a started run
(with its event stream), the answer to a cancel, the run live on a conversation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from domain.model import RunStatus
from ports.approvals import ANY_ARGS, NO_APPROVALS, ApprovalStore, ArgsChecker
from ports.checkpoints import CheckpointPort
from ports.events import RunEventLog
from ports.journal import ToolJournal
from ports.queue import MessageQueue
from ports.runs import RunRepository
from ports.signals import RunSignals
from services.hub import RunStream


@dataclass(frozen=True)
class StartedRun:
    conversation_id: str
    run_id: str
    # the run's events from id 1, in batches, complete even if the run has already ended
    # (a stream opened from here can never miss the start of a fast run)
    events: Callable[[], RunStream] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class CancelResult:
    conversation_id: str
    run_id: str
    status: RunStatus  # `running` when the owner did not stop within the wait


@dataclass(frozen=True)
class LiveRun:
    run_id: str
    base_count: int


@dataclass(frozen=True)
class RunStores:
    """The ports a run touches, bundled (one store adapter usually implements the first four)."""

    runs: RunRepository
    events: RunEventLog
    signals: RunSignals
    journal: ToolJournal
    checkpoints: CheckpointPort
    approvals: ApprovalStore = NO_APPROVALS
    checker: ArgsChecker = ANY_ARGS  # edited tool arguments against the tool's schema
    queue: MessageQueue | None = None  # None: messages are never queued (a store without one)
