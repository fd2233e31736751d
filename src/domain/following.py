"""Following a run that another process executes, through the run event log."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING

from domain.events import StreamEvent
from domain.hub import Batch, Item, up_to_terminal
from domain.model import Run, RunStatus

if TYPE_CHECKING:
    from domain.runs import RunService


async def follow_log(service: RunService, run: Run, after: int) -> AsyncIterator[Batch]:
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


async def iterate(items: Iterable[Item]) -> AsyncIterator[Batch]:
    """Items already read (a finished run's replay) as a stream of one batch."""
    yield list(items)


async def flatten(batches: AsyncIterator[Batch]) -> AsyncIterator[Item]:
    async for batch in batches:
        for item in batch:
            yield item
