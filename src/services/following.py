"""Following runs: from this process's memory while it executes them, through the run
event log while another process does, replayed from the log once they ended."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from contextlib import aclosing, suppress

from domain import lifecycle
from domain.errors import SophosError
from domain.events import StreamEvent
from domain.lifecycle import Outcome
from domain.model import Run, RunStatus
from domain.principals import LOCAL, Principal, sees
from domain.queue import QueuedMessage, queue_held
from ports.metrics import MetricsPort
from services.handles import (
    TERMINAL_EVENTS,
    Batch,
    Item,
    RunStream,
    StartedRun,
    resume_after,
    run_tag,
    up_to_terminal,
)
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
                    tail.append(
                        (last + len(tail) + 1, StreamEvent("end", {"conversation": run.conversation_id, "status": status}))
                    )
                yield tail
                return
            if await kernel.reclaim(current):
                continue  # its terminal event is in the log now


async def follow_batches(
    kernel: RunKernel,
    conversation_id: str,
    after: int,
    tag: str | None = None,
    through_queue: bool = False,
    *,
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
    return StreamEvent("chat-error", {"code": "NOT_FOUND", "message": "Conversation Not Found", "conversation": conversation_id})


async def follow_run(kernel: RunKernel, run: Run, after: int) -> RunStream:
    """The events of `run` after id `after`, up to its terminal event: live from this
    process, through the event log while another process executes it, else replayed
    from the log (a terminal event built from the row when the log no longer has one)."""
    deps = kernel.deps
    active, base = kernel.live.by_run(run.id), run.base_count
    if active is not None:
        return RunStream(run.id, counted(active.batches(after), deps.metrics, "local"), base_count=base)
    current = await deps.stores.runs.get_run(run.id) or run
    if current.status is RunStatus.RUNNING:
        return RunStream(run.id, counted(follow_log(kernel, current, after), deps.metrics, "log"), base_count=base)
    items, done = up_to_terminal(list(await deps.stores.events.read(run.id, after)))
    if not done:
        outcome = Outcome(current.status, current.error)
        items.append((items[-1][0] + 1 if items else after + 1, lifecycle.terminal_event(run.conversation_id, outcome)))
    return RunStream(run.id, iterate(items), base_count=base)


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


async def follow_queue(kernel: RunKernel, conversation_id: str, after: int, tag: str | None = None) -> RunStream | StreamEvent:
    """As `follow_conversation`, then run after run (`follow_chain` with `queue`): when a
    run's terminal event is followed by another run of the conversation (the next queued
    message, started with the first's outcome), a `started` event (id 0 of the new run)
    introduces the new run's events. The stream ends after a terminal event that no run
    follows."""
    first = await follow_conversation(kernel, conversation_id, after, tag)
    return first if isinstance(first, StreamEvent) else ConversationStream(kernel, conversation_id, first)


class ConversationStream(RunStream):
    """A conversation's runs in turn; `run_id` is the run whose events come next."""

    def __init__(self, kernel: RunKernel, conversation_id: str, first: RunStream) -> None:
        runs = follow_chain(kernel, conversation_id, first, queue=True)
        super().__init__(first.run_id, self._batches_of(conversation_id, runs), chained=True)

    async def _batches_of(self, conversation_id: str, runs: AsyncGenerator[RunStream, None]) -> AsyncGenerator[Batch, None]:
        async with aclosing(runs):
            async for stream in runs:
                if stream.run_id != self.run_id:
                    self.run_id = stream.run_id
                    data = {"conversation": conversation_id, "run": stream.run_id, "baseMessageCount": stream.base_count}
                    yield [(0, StreamEvent("started", data))]
                async with aclosing(stream):
                    async for batch in stream:
                        yield batch


# --- a chain of runs ---------------------------------------------------------------------

# starts a resume of the conversation, as the follower's client would (raises a SophosError
# when it cannot: not resumable, a decision is needed, the server drains)
Resumer = Callable[[str], Awaitable[StartedRun]]

# what a stream of a queued message ends with while its queue is held: it will not start by itself
HELD = StreamEvent(
    "chat-error",
    {
        "code": "QUEUE_HELD",
        "message": (
            "The run before it failed or was cancelled, so the queue is held: the run is still pending. "
            "Cancel it (it is dropped) and send the message again"
        ),
    },
)


async def follow_from(
    kernel: RunKernel, first: Run | QueuedMessage | StartedRun, after: int = 0, *, resume: Resumer | None = None
) -> AsyncGenerator[RunStream, None]:
    """`follow_chain` from the run a client names, after its event `after`: a queued
    message's run once it starts (`follow_queued`). A run this process has just started for
    the client is followed alone: it ends with its outcome or with this process."""
    if isinstance(first, StartedRun):
        assert first.events is not None  # a run this process started always has its stream
        yield first.events()
        return
    stream = follow_queued(kernel, first) if isinstance(first, QueuedMessage) else await follow_run(kernel, first, after)
    async with aclosing(follow_chain(kernel, first.conversation_id, stream, resume=resume)) as runs:
        async for run in runs:
            yield run


async def follow_chain(
    kernel: RunKernel, conversation_id: str, first: RunStream, *, queue: bool = False, resume: Resumer | None = None
) -> AsyncGenerator[RunStream, None]:
    """A thread's runs from `first` on, one stream each, each read to its end before the
    next is asked for: after a run's stream, the thread's next run (`next_run`: with
    `queue`, the next queued message's; the resume of a run a crash or a drain stopped),
    until no run goes on."""
    current = first
    while True:
        yield current
        run = await next_run(kernel, conversation_id, current.run_id, queue=queue, resume=resume)
        if run is None:
            return
        current = await follow_run(kernel, run, 0)


async def next_run(
    kernel: RunKernel, conversation_id: str, ended: str, *, queue: bool = False, resume: Resumer | None = None
) -> Run | None:
    """The run that goes on after run `ended`, whose stream ended, or None. With `queue`,
    the thread's run that started after it (the next queued message starts in the
    transaction of its outcome, so it is recorded by now). Otherwise only when `ended` was
    stopped by a crash or a drain (`interrupted`): the run that resumed it (on any process:
    adoption), else the one `resume` starts, else (another client's resume won) that one."""
    runs = kernel.deps.stores.runs
    if queue:
        latest = await runs.latest_run(conversation_id)
        return latest if latest is not None and latest.id != ended else None
    run = await runs.get_run(ended)
    if run is None or run.status is not RunStatus.INTERRUPTED:
        return None
    found = await successor(kernel, run)
    if found is None and resume is not None:
        with suppress(SophosError):  # not resumable, or a decision is needed: it stays stopped
            found = await runs.get_run((await resume(conversation_id)).run_id)
        found = found or await successor(kernel, run)
    return found


async def successor(kernel: RunKernel, run: Run) -> Run | None:
    """The thread's run that started after `run` (the latest), if any."""
    latest = await kernel.deps.stores.runs.latest_run(run.conversation_id)
    if latest is None or latest.id == run.id or latest.started_at < run.started_at:
        return None
    return latest


async def rejoin_point(kernel: RunKernel, run: Run, after: int, tag: str | None) -> tuple[Run, int]:
    """Where a re-join of `run` resumes for a client that last saw event `after` of the run
    tagged `tag` (None: no id): in `run` after it when the tag is its own, in the run that
    went on with `run` when the tag is that run's, else from the start of `run`."""
    if tag is None:
        return run, 0
    if tag == run_tag(run.id):
        return run, after
    found = await successor(kernel, run)
    return (found, after) if found is not None and run_tag(found.id) == tag else (run, 0)


def follow_queued(kernel: RunKernel, message: QueuedMessage) -> RunStream:
    """The run of the queued `message` once it starts (the store gives it the message's
    id), as a stream named by the message's id. The wait is inside the stream, so a
    response's heartbeats go on meanwhile; a stream of a message held in its queue ends at
    once with HELD; one that left the queue without a run (dropped, its thread deleted)
    ends with nothing, as does one this process stops waiting for (it drains)."""
    return RunStream(message.id, _queued_run(kernel, message))


async def _queued_run(kernel: RunKernel, message: QueuedMessage) -> AsyncGenerator[Batch, None]:
    run = await _start_of(kernel, message)
    if isinstance(run, StreamEvent):
        yield [(1, run)]
    elif run is not None:
        stream = await follow_run(kernel, run, 0)
        async with aclosing(stream):
            async for batch in stream:
                yield batch


async def _start_of(kernel: RunKernel, message: QueuedMessage) -> Run | StreamEvent | None:
    """The run of `message` once it started, HELD while its queue is held (domain.queue:
    it waits for a person), None when it left the queue without one or this process drains."""
    runs, queue = kernel.deps.stores.runs, kernel.deps.stores.queue
    cid, qid = message.conversation_id, message.id
    while not kernel.draining:
        found = await runs.get_run(qid)
        if found is not None:
            return found
        if queue is None or all(q.id != qid for q in await queue.queued(cid)):
            return await runs.get_run(qid)  # started between the two reads, or dropped
        latest = await runs.latest_run(cid)
        if queue_held(latest):
            return HELD
        await _until_ended(kernel, latest)
    return None


async def _until_ended(kernel: RunKernel, ahead: Run | None) -> None:
    """Until `ahead`, the running run a queued message waits behind, ends (the message
    starts with its outcome); when none runs (a due queue that a supervisor drains within
    its period, a run that waits for a person), for a while."""
    if ahead is None or ahead.status is not RunStatus.RUNNING:
        await asyncio.sleep(kernel.deps.poll_seconds * 10)
        return
    active = kernel.live.by_run(ahead.id)
    if active is not None:
        await active.finished.wait()
        return
    async with aclosing(follow_log(kernel, ahead, 0)) as events:
        async for _ in events:
            if kernel.draining:
                return


async def iterate(items: Iterable[Item]) -> AsyncGenerator[Batch, None]:
    """Items already read (a finished run's replay) as a stream of one batch."""
    yield list(items)


async def flatten(batches: RunStream) -> AsyncGenerator[Item, None]:
    """One item at a time; closing it closes `batches` at once (a client that went away)."""
    async with aclosing(batches):
        async for batch in batches:
            for item in batch:
                yield item


async def counted(batches: AsyncGenerator[Batch, None], metrics: MetricsPort, source: str) -> AsyncGenerator[Batch, None]:
    """`batches`, counted as an active stream (`source`: local or log) while it is read."""
    metrics.stream_opened(source)
    try:
        async with aclosing(batches):
            async for batch in batches:
                yield batch
    finally:
        metrics.stream_closed(source)
