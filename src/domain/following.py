"""Following a run that another process executes, through the run event log."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from contextlib import aclosing
from typing import TYPE_CHECKING

from domain.events import StreamEvent
from domain.hub import TERMINAL_EVENTS, Item
from domain.model import Run, RunStatus
from ports.metrics import MetricsPort

if TYPE_CHECKING:
    from domain.runs import RunService


async def follow_log(service: RunService, run: Run, after: int) -> AsyncGenerator[Item, None]:
    """Follow a run executed by another process through the event log. The terminal
    event is written with the outcome, by the owner or by whoever reclaims the run."""
    last, idle = after, 0.0
    while True:
        items = await service.stores.events.wait(run.id, last, service.poll_seconds * 10)
        for item in items:
            last = item[0]
            yield item
            if item[1].event in TERMINAL_EVENTS:
                return
        if items:
            idle = 0.0
            continue
        idle += service.poll_seconds * 10
        if idle >= max(service.lease_seconds / 3, 1.0):
            idle = 0.0
            current = await service.runs.latest_run(run.conversation_id, service.lease_seconds)
            if current is None or current.id != run.id or current.status is not RunStatus.RUNNING:
                tail = await service.stores.events.read(run.id, last)
                for item in tail:
                    yield item
                if not tail or tail[-1][1].event not in TERMINAL_EVENTS:
                    status = current.status.value if current and current.id == run.id else "interrupted"
                    yield last + len(tail) + 1, StreamEvent("end", {"conversation": run.conversation_id, "status": status})
                return
            if await service.reclaim(current):
                continue  # its terminal event is in the log now


async def iterate(items: Iterable[Item]) -> AsyncIterator[Item]:
    """Items already read (a finished run's replay) as a stream."""
    for item in items:
        yield item


async def counted(items: AsyncGenerator[Item, None], metrics: MetricsPort, source: str) -> AsyncIterator[Item]:
    """`items`, counted as an active stream (`source`: local or log) while it is read."""
    metrics.stream_opened(source)
    try:
        async with aclosing(items):
            async for item in items:
                yield item
    finally:
        metrics.stream_closed(source)
