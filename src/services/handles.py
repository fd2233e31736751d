"""What the run services take in and hand out, and all the edges may hold of a live run:
the stores a run touches, a run's event stream (`RunStream`, its event ids), a started run,
the answer to a cancel, the run live on a conversation. The live runs themselves
(services.hub) stay inside the services."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field

from domain.commands import Resume, SendMessage, StartRun
from domain.errors import NotSupported
from domain.events import StreamEvent
from domain.model import RunStatus
from ports.approvals import ANY_ARGS, NO_APPROVALS, ApprovalStore, ArgsChecker
from ports.checkpoints import CheckpointPort
from ports.events import RunEventLog
from ports.journal import ToolJournal
from ports.queue import MessageQueue
from ports.runs import RunRepository
from ports.signals import RunSignals
from ports.webhooks import WebhookOutbox
from services.audit import NO_AUDIT, AuditTrail

TERMINAL_EVENTS = frozenset({"end", "chat-error"})
Item = tuple[int, StreamEvent]
Batch = list[Item]  # events that were ready together: one socket write for a stream


def up_to_terminal(items: list[Item]) -> tuple[Batch, bool]:
    """The items up to and including the first terminal event, and whether there was one."""
    for i, item in enumerate(items):
        if item[1].event in TERMINAL_EVENTS:
            return items[: i + 1], True
    return items, False


class RunStream:
    """One run's events, in batches (the events that were ready together), with the id of
    that run, so the stream can name its events unmistakably (`<n>@<run tag>`)."""

    def __init__(
        self, run_id: str, batches: AsyncGenerator[Batch, None], chained: bool = False, base_count: int | None = None
    ) -> None:
        self.run_id = run_id  # a chained stream moves it on to each next run before its events
        self._batches = batches
        self.chained = chained  # the conversation's runs one after another: a terminal event is not the end
        self.base_count = base_count  # thread messages before the run's output, when the stream knows it

    def __aiter__(self) -> RunStream:
        return self

    async def __anext__(self) -> Batch:
        return await self._batches.__anext__()

    async def aclose(self) -> None:
        await self._batches.aclose()


def run_tag(run_id: str) -> str:
    """The short name of a run in event ids: the first 8 hex digits of its id."""
    return run_id.replace("-", "")[:8]


def resume_after(run_id: str, after: int, tag: str | None) -> int:
    """Where a stream of run `run_id` resumes for a client that last saw event `after`
    of the run tagged `tag`: after it, for that run or a bare number (the contract's
    ids); from the start when the id named another run (an earlier run's id must not
    make this run's stream skip its first events)."""
    return after if tag is None or tag == run_tag(run_id) else 0


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
    audit: AuditTrail = NO_AUDIT  # a person's decisions on tool calls
    webhooks: WebhookOutbox | None = None  # None: runs name no webhook (a store without an outbox)


async def attach_webhook(stores: RunStores, run_id: str, conversation_id: str, url: str | None) -> None:
    """Name `url` (None: none) as the webhook of the run `run_id` (or of the queued message
    whose run takes that id), before the row is inserted: its outcome then makes a delivery
    (ports.webhooks)."""
    if url is None:
        return
    if stores.webhooks is None:
        raise NotSupported("This store keeps no webhooks")
    await stores.webhooks.attach_webhook(run_id, conversation_id, url)


async def webhook_of_command(stores: RunStores, command: StartRun) -> str | None:
    """The webhook of the run `command` starts: a new message's own; a resume's is that of
    the interrupted (or waiting) run it continues, whose outcome it completes."""
    if isinstance(command, SendMessage):
        return command.webhook
    if not isinstance(command, Resume) or stores.webhooks is None:
        return None
    latest = await stores.runs.latest_run(command.conversation_id)
    if latest is None or latest.status not in (RunStatus.INTERRUPTED, RunStatus.WAITING):
        return None
    return await stores.webhooks.run_webhook(latest.id)
