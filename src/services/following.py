"""Following runs: from this process's memory while it executes them, through the run
event log while another process does, replayed from the log once they ended."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable
from contextlib import aclosing

from domain import lifecycle
from domain.events import StreamEvent
from domain.lifecycle import Outcome
from domain.model import Run, RunStatus
from domain.principals import LOCAL, Principal, sees
from ports.metrics import MetricsPort
from services.handles import TERMINAL_EVENTS, Batch, Item, RunStream, resume_after, run_tag, up_to_terminal
from services.kernel import RunKernel


async def follow_log(kernel: RunKernel, run: Run, after: int) -> AsyncGenerator[Batch, None]:
    """Follow a run executed by another process through the event log, in batches as
    read. The terminal event is written with the outcome, by the owner or by whoever
    reclaims the run."""
    deps = kernel.deps
    events, wait = deps.stores.events, deps.poll_seconds * 10
    last, idle = after, 0.0
    while True:
        items, done = up_to_terminal(list(await events.wait(run.id, last, wait)))
        if items:
            last = items[-1][0]
            yield items
            if done:
                return
            idle = 0.0
            continue
        idle += wait
        if idle >= max(deps.lease_seconds / 3, 1.0):
            idle = 0.0
            current = await deps.stores.runs.latest_run(run.conversation_id, deps.lease_seconds)
            if current is None or current.id != run.id or current.status is not RunStatus.RUNNING:
                tail, done = up_to_terminal(list(await events.read(run.id, last)))
                if not done:
                    status = current.status.value if current and current.id == run.id else "interrupted"
                    tail.append((last + len(tail) + 1, StreamEvent("end", {"conversation": run.conversation_id, "status": status})))
                yield tail
                return
            if await kernel.reclaim(current):
                continue  # its terminal event is in the log now


async def follow_batches(
    kernel: RunKernel, conversation_id: str, after: int, tag: str | None = None, through_queue: bool = False, *,
    by: Principal = LOCAL,
) -> RunStream | StreamEvent:
    """The events of the conversation's live run after id `after` (ending with its
    terminal event), in batches (the events that were ready together), from this process's
    memory or from the run event log; or, when no run is live, the durable answer (a
    single event without an id). `tag` names the run `after` belongs to (None: the
    contract's bare number, taken as this run's); an id of another run replays this one
    from the start. `through_queue`: on into the runs that follow (`follow_queue`).
    Another user's conversation answers as an unknown one."""
    if not by.sees_all:
        found = await kernel.deps.stores.runs.get_conversation(conversation_id)
        if found is None or not sees(by, found.owner):
            return _not_found(conversation_id)
    if through_queue:
        return await follow_queue(kernel, conversation_id, after, tag)
    return await follow_conversation(kernel, conversation_id, after, tag)


def _not_found(conversation_id: str) -> StreamEvent:
    return StreamEvent("chat-error", {"code": "NOT_FOUND", "message": "Conversation Not Found",
                                      "conversation": conversation_id})


async def follow_run(kernel: RunKernel, run: Run, after: int) -> RunStream:
    """The events of `run` after id `after`, up to its terminal event: live from this
    process, through the event log while another process executes it, else replayed
    from the log (a terminal event built from the row when the log no longer has one)."""
    deps = kernel.deps
    active = kernel.live.by_run(run.id)
    if active is not None:
        return RunStream(run.id, counted(active.batches(after), deps.metrics, "local"))
    current = await deps.stores.runs.get_run(run.id) or run
    if current.status is RunStatus.RUNNING:
        return RunStream(run.id, counted(follow_log(kernel, current, after), deps.metrics, "log"))
    items, done = up_to_terminal(list(await deps.stores.events.read(run.id, after)))
    if not done:
        outcome = Outcome(current.status, current.error)
        items.append((items[-1][0] + 1 if items else after + 1, lifecycle.terminal_event(run.conversation_id, outcome)))
    return RunStream(run.id, iterate(items))


async def follow_conversation(
    kernel: RunKernel, conversation_id: str, after: int, tag: str | None = None
) -> RunStream | StreamEvent:
    """The conversation's live run after id `after`, from this process's memory or from the
    run event log; a finished run's replay when `after` points into it; else the durable
    answer (a single event without an id)."""
    deps = kernel.deps
    active = kernel.live.get(conversation_id)
    if active is not None:
        start = resume_after(active.run_id, after, tag)
        return RunStream(active.run_id, counted(active.batches(start), deps.metrics, "local"))
    conv = await deps.stores.runs.get_conversation(conversation_id)
    if conv is None:
        return _not_found(conversation_id)
    latest = await deps.stores.runs.latest_run(conversation_id)
    if latest is not None and latest.status is RunStatus.RUNNING:
        start = resume_after(latest.id, after, tag)
        return RunStream(latest.id, counted(follow_log(kernel, latest, start), deps.metrics, "log"))
    if latest is not None and resume_after(latest.id, after, tag) > 0:
        replay = await deps.stores.events.read(latest.id, after)
        if replay and replay[-1][1].event in TERMINAL_EVENTS:
            return RunStream(latest.id, iterate(replay))
    status = conv.status.value if conv.status else None
    return StreamEvent("end", {"conversation": conversation_id, "status": status})


async def follow_queue(
    kernel: RunKernel, conversation_id: str, after: int, tag: str | None = None
) -> RunStream | StreamEvent:
    """As `follow_conversation`, then run after run: when a run's terminal event is followed
    by another run of the conversation (the next queued message, started with the first's
    outcome), a `started` event (id 0 of the new run) introduces the new run's events. The
    stream ends after a terminal event that no run follows."""
    first = await follow_conversation(kernel, conversation_id, after, tag)
    return first if isinstance(first, StreamEvent) else ConversationStream(kernel, conversation_id, first)


class ConversationStream(RunStream):
    """A conversation's runs in turn; `run_id` is the run whose events come next."""

    def __init__(self, kernel: RunKernel, conversation_id: str, first: RunStream) -> None:
        super().__init__(first.run_id, self._runs(kernel, conversation_id, first), chained=True)

    async def _runs(self, kernel: RunKernel, conversation_id: str, current: RunStream) -> AsyncGenerator[Batch, None]:
        while True:
            async with aclosing(current):
                async for batch in current:
                    yield batch
            # a queued run is recorded with the outcome before it: it is live by now, if any
            live = await kernel.live_run(conversation_id)
            if live is None or live.run_id == current.run_id:
                return
            following = await follow_conversation(kernel, conversation_id, 0, run_tag(live.run_id))
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
