"""A thread's runs one after another, as one stream: what LangGraph's thread protocol streams
(`POST /threads/{id}/stream/events`, its websocket). Its event stream is the thread's, not a
run's: it replays the thread's runs from the event log, follows the one going (live, or
through the log when another process executes it) and waits for the next one, until the
client leaves.

Each run begins with a `run-start` marker (its id and its place among the thread's runs),
then its own events as stored, up to its terminal event. A client that saw the thread up to
run `first` starts there: the runs before it are not read again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing

from domain.events import StreamEvent
from domain.model import Run
from domain.thread_protocol import RUN_START
from services.following import follow_run
from services.handles import Batch
from services.kernel import RunKernel

MAX_RUNS = 10_000  # of a thread, read to number them (a thread with more numbers its latest)
WAIT_SECONDS = 0.25  # how often a feed that has replayed every run looks for the next one


async def _runs_after(kernel: RunKernel, cid: str, seen: set[str]) -> list[Run] | None:
    """The thread's runs not in `seen`, oldest first (its latest read first: one cheap read
    while nothing new started); None once the thread is deleted."""
    stores = kernel.deps.stores.runs
    if seen:
        latest = await stores.latest_run(cid)
        if latest is not None and latest.id in seen:
            return []
    runs = await stores.recent_runs(cid, MAX_RUNS)
    if not runs and await stores.get_conversation(cid) is None:
        return None
    return sorted((r for r in runs if r.id not in seen), key=lambda r: r.started_at)


async def thread_feed(kernel: RunKernel, cid: str, first: int | None = None) -> AsyncGenerator[Batch, None]:
    """The thread's runs from its `first` on (0: its first run; None: its latest, or the
    first to start), each as its `run-start` marker and its events, then each run that
    starts after, until the caller stops or the thread is deleted."""
    seen: set[str] = set()
    ordinal = 0
    while True:
        fresh = await _runs_after(kernel, cid, seen)
        if fresh is None:
            return
        if first is None:
            first = len(fresh) - 1 if fresh else 0
        if not fresh:
            await asyncio.sleep(max(kernel.deps.poll_seconds, WAIT_SECONDS))
            continue
        for run in fresh:
            seen.add(run.id)
            if ordinal >= first:
                yield [(0, StreamEvent(RUN_START, {"run_id": run.id, "ordinal": ordinal}))]
                async with aclosing(await follow_run(kernel, run, 0)) as events:
                    async for batch in events:
                        yield batch
            ordinal += 1
