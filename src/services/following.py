"""Following a run that another process executes, through the run event log."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable
from contextlib import aclosing
from typing import TYPE_CHECKING

from domain.events import StreamEvent
from domain.model import Run, RunStatus
from ports.metrics import MetricsPort
from services.handles import TERMINAL_EVENTS, Batch, Item, RunStream, resume_after, run_tag, up_to_terminal

if TYPE_CHECKING:
    from services.runs import RunService


async def follow_log(service: RunService, run: Run, after: int) -> AsyncGenerator[Batch, None]:
    """Follow a run executed by another process through the event log, in batches as
    read. The terminal event is written with the outcome, by the owner or by whoever
    reclaims the run."""
    last, idle = after, 0.0
    while True:
        items, done = up_to_terminal(list(await service.stores.events.wait(run.id, last, service.poll_seconds * 10)))
        if items:
            last = items[-1][0]
            yield items
            if done:
                return
            idle = 0.0
            continue
        idle += service.poll_seconds * 10
        if idle >= max(service.lease_seconds / 3, 1.0):
            idle = 0.0
            current = await service.runs.latest_run(run.conversation_id, service.lease_seconds)
            if current is None or current.id != run.id or current.status is not RunStatus.RUNNING:
                tail, done = up_to_terminal(list(await service.stores.events.read(run.id, last)))
                if not done:
                    status = current.status.value if current and current.id == run.id else "interrupted"
                    tail.append((last + len(tail) + 1, StreamEvent("end", {"conversation": run.conversation_id, "status": status})))
                yield tail
                return
            if await service.reclaim(current):
                continue  # its terminal event is in the log now


async def follow_conversation(
    service: RunService, conversation_id: str, after: int, tag: str | None = None
) -> RunStream | StreamEvent:
    """The conversation's live run after id `after`, from this process's memory or from the
    run event log; a finished run's replay when `after` points into it; else the durable
    answer (a single event without an id)."""
    active = service.hub.get(conversation_id)
    if active is not None:
        start = resume_after(active.run_id, after, tag)
        return RunStream(active.run_id, counted(active.batches(start), service.metrics, "local"))
    conv = await service.runs.get_conversation(conversation_id)
    if conv is None:
        data = {"code": "NOT_FOUND", "message": "Conversation Not Found", "conversation": conversation_id}
        return StreamEvent("chat-error", data)
    latest = await service.runs.latest_run(conversation_id)
    if latest is not None and latest.status is RunStatus.RUNNING:
        start = resume_after(latest.id, after, tag)
        return RunStream(latest.id, counted(follow_log(service, latest, start), service.metrics, "log"))
    if latest is not None and resume_after(latest.id, after, tag) > 0:
        replay = await service.stores.events.read(latest.id, after)
        if replay and replay[-1][1].event in TERMINAL_EVENTS:
            return RunStream(latest.id, iterate(replay))
    status = conv.status.value if conv.status else None
    return StreamEvent("end", {"conversation": conversation_id, "status": status})


async def follow_queue(
    service: RunService, conversation_id: str, after: int, tag: str | None = None
) -> RunStream | StreamEvent:
    """As `follow_conversation`, then run after run: when a run's terminal event is followed
    by another run of the conversation (the next queued message, started with the first's
    outcome), a `started` event (id 0 of the new run) introduces the new run's events. The
    stream ends after a terminal event that no run follows."""
    first = await follow_conversation(service, conversation_id, after, tag)
    return first if isinstance(first, StreamEvent) else ConversationStream(service, conversation_id, first)


class ConversationStream(RunStream):
    """A conversation's runs in turn; `run_id` is the run whose events come next."""

    def __init__(self, service: RunService, conversation_id: str, first: RunStream) -> None:
        super().__init__(first.run_id, self._runs(service, conversation_id, first), chained=True)

    async def _runs(self, service: RunService, conversation_id: str, current: RunStream) -> AsyncGenerator[Batch, None]:
        while True:
            async with aclosing(current):
                async for batch in current:
                    yield batch
            # a queued run is recorded with the outcome before it: it is live by now, if any
            live = await service.live_run(conversation_id)
            if live is None or live.run_id == current.run_id:
                return
            following = await follow_conversation(service, conversation_id, 0, run_tag(live.run_id))
            if isinstance(following, StreamEvent):
                return
            self.run_id = following.run_id
            data = {"conversation": conversation_id, "run": following.run_id, "baseMessageCount": live.base_count}
            yield [(0, StreamEvent("started", data))]
            current = following


async def iterate(items: Iterable[Item]) -> AsyncGenerator[Batch, None]:
    """Items already read (a finished run's replay) as a stream of one batch."""
    yield list(items)


async def flatten(batches: RunStream) -> AsyncGenerator[Item, None]:
    """One item at a time; closing it closes `batches` at once (a client that went away)."""
    async with aclosing(batches):
        async for batch in batches:
            for item in batch:
                yield item


async def counted(
    batches: AsyncGenerator[Batch, None], metrics: MetricsPort, source: str
) -> AsyncGenerator[Batch, None]:
    """`batches`, counted as an active stream (`source`: local or log) while it is read."""
    metrics.stream_opened(source)
    try:
        async with aclosing(batches):
            async for batch in batches:
                yield batch
    finally:
        metrics.stream_closed(source)
