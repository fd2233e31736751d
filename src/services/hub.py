"""The runs this process executes: their tasks, event buffers and local subscribers.

Event ids are 1, 2, 3… per run (on the wire `<n>@<run tag>`, see RunStream). A local subscriber replays the buffer and follows live
events with no delay; every event is also queued for the run event log (RunEventLog), so
followers in other processes, and reconnects after this process is gone, see the same
events with the same ids.

The buffer is bounded: it keeps the last REPLAY_EVENTS events, and never drops one the
event log does not hold yet. A subscriber that asks for older events gets them from the log
(a 300,000-token answer held 300,000 events, ~670 MiB, in this buffer: issue 34).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from domain.errors import StorageFailure
from domain.events import StreamEvent
from domain.lifecycle import Outcome, StopReason
from domain.queue import model_writing
from services.handles import TERMINAL_EVENTS, Batch, Item, up_to_terminal
from services.handles import RunStream as RunStream  # where it was defined before services.handles

log = logging.getLogger(__name__)

History = Callable[[int], Awaitable[Sequence[Item]]]  # the event log's events of the run after an id
REPLAY_EVENTS = 1000


@dataclass
class ActiveRun:
    run_id: str
    conversation_id: str
    base_count: int = 0  # thread messages before this run's output (its own message included)
    history: History | None = None  # None: nothing is ever dropped from the buffer
    replay_limit: int = REPLAY_EVENTS
    events: deque[Item] = field(default_factory=deque)  # the latest events, for replay
    last_id: int = 0
    flushed: int = 0  # every event up to this id is in the run event log
    unflushed: list[Item] = field(default_factory=list)  # not yet in the run event log
    subscribers: set[asyncio.Queue[Item | None]] = field(default_factory=set)
    task: asyncio.Task[None] | None = None
    started: bool = False  # the task's body runs: cancelling it now runs its cleanup
    finishing: bool = False  # the outcome is being recorded: too late to stop
    stop_reason: StopReason | None = None
    needs_input: bool = False  # a new message: a stop waits until it is durable
    steer_requested: bool = False  # a steering message waits: hand over at the next step boundary
    writing: bool = False  # the model writes an answer with no tool call yet (domain.queue.model_writing)
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    input_recorded: asyncio.Event = field(default_factory=asyncio.Event)
    failure: BaseException | None = None  # what ended the run, if it failed
    outcome: Outcome | None = None
    began: float = field(default_factory=time.monotonic)  # for the run duration metric
    # followed up when it ends (turn counts, the model's title: services.after_runs); a hosted
    # graph's run is not: its state is the graph's, not a conversation's messages
    follow_up: bool = True

    @property
    def context(self) -> dict[str, str]:
        return {"conversation_id": self.conversation_id, "run_id": self.run_id}

    @property
    def next_id(self) -> int:
        return self.last_id + 1

    def publish(self, event: StreamEvent, durable: bool = True) -> int:
        """Give the event the next id and hand it to subscribers; `durable` queues it for
        the event log (a terminal event is written with the outcome instead)."""
        self.last_id += 1
        self.writing = model_writing(self.writing, event)
        item = (self.last_id, event)
        self.events.append(item)
        if durable:
            self.unflushed.append(item)
        self._trim()
        for queue in list(self.subscribers):
            try:
                queue.put_nowait(item)
            except Exception:  # a broken subscriber must never stop the run
                log.warning("dropping a subscriber", extra=self.context, exc_info=True)
                self.subscribers.discard(queue)
        return item[0]

    def take_unflushed(self) -> list[Item]:
        items, self.unflushed = self.unflushed, []
        return items

    def mark_flushed(self, items: Sequence[Item]) -> None:
        """`items` (taken by `take_unflushed`) are in the event log: the buffer may let
        them go."""
        if items:
            self.flushed = max(self.flushed, items[-1][0])
            self._trim()

    def _trim(self) -> None:
        if self.history is None:
            return
        events = self.events
        while len(events) > self.replay_limit and events[0][0] <= self.flushed:
            events.popleft()

    def request_steer(self) -> None:
        """A steering message waits: hand over to it at the next step boundary, or at once
        while the model writes a text answer (its text is kept, the run completes)."""
        self.steer_requested = True
        if self.writing:
            log.info("a steer stops the answer being written", extra=self.context)
            self.request_stop(StopReason.STEER)

    async def input_saved(self) -> None:
        """Until the run's input is committed; what stopped the run first is raised instead
        (StorageFailure when that was no exception)."""
        recorded = asyncio.ensure_future(self.input_recorded.wait())
        ended = asyncio.ensure_future(self.finished.wait())
        await asyncio.wait({recorded, ended}, return_when=asyncio.FIRST_COMPLETED)
        recorded.cancel()
        ended.cancel()
        if not self.input_recorded.is_set():
            failure = self.failure
            raise failure if isinstance(failure, Exception) else StorageFailure("The run stopped before its message was saved")

    def request_stop(self, reason: StopReason) -> None:
        """Stop the task: at once if its body runs and its input is durable, otherwise as
        soon as it is (a task cancelled before its first step would skip its cleanup, and
        a message acknowledged to its sender must be saved)."""
        if self.stop_reason is None or reason is StopReason.LOST:
            self.stop_reason = reason
        if self.task is None or self.task.done() or not self.started or self.finishing:
            return
        if self.needs_input and not self.input_recorded.is_set() and reason is not StopReason.LOST:
            return
        self.task.cancel()

    async def subscribe(self, after: int = 0) -> AsyncGenerator[Item, None]:
        """Replay buffered events with id > after, then follow live ones until the run's
        terminal event (`end` or `chat-error`). The terminal event is always sent, even
        when `after` is beyond it, so a stream never ends (or idles) without one."""
        async for batch in self.batches(after):
            for item in batch:
                yield item

    async def batches(self, after: int = 0) -> AsyncGenerator[Batch, None]:
        """As `subscribe`, in batches: each holds every event that was ready when the
        subscriber woke (never waits for more, so a lone token goes out at once)."""
        queue: asyncio.Queue[Item | None] = asyncio.Queue()
        replay = [e for e in self.events if e[0] > after or e[1].event in TERMINAL_EVENTS]
        oldest = self.events[0][0] if self.events else self.next_id
        ended = self.finished.is_set()  # then the buffer already holds every later event
        if not ended:
            self.subscribers.add(queue)  # from here on, close() will wake this queue
        try:
            if after + 1 < oldest and self.history is not None:
                # dropped from the buffer, so in the log already (`_trim`): read from there
                older = [e for e in await self.history(after) if e[0] < oldest and e[1].event not in TERMINAL_EVENTS]
                replay = older + replay
            last = replay[-1][0] if replay else after
            batch, done = up_to_terminal(replay)
            if batch:
                yield batch
            if done or ended:
                return
            while True:
                ready = [await queue.get()]
                while not queue.empty() and ready[-1] is not None:
                    ready.append(queue.get_nowait())
                closed = ready[-1] is None
                batch, done = up_to_terminal(
                    [got for got in ready if got is not None and (got[0] > last or got[1].event in TERMINAL_EVENTS)]
                )
                if batch:
                    last = batch[-1][0]
                    yield batch
                if done or closed:
                    return
        finally:
            self.subscribers.discard(queue)

    def close(self) -> None:
        self.finished.set()
        for queue in list(self.subscribers):
            queue.put_nowait(None)


class RunHub:
    """Active runs of this process, by conversation id."""

    def __init__(self) -> None:
        self._runs: dict[str, ActiveRun] = {}
        self._ended: list[Callable[[ActiveRun], None]] = []

    def when_ended(self, listener: Callable[[ActiveRun], None]) -> None:
        """Call `listener` with every run of this process that ends from now on, once it has
        left the hub with its outcome written and its terminal event sent (services.after_runs).
        A listener must not block: it schedules its work; one that raises is logged."""
        self._ended.append(listener)

    def add(self, run: ActiveRun) -> None:
        self._runs[run.conversation_id] = run

    def get(self, conversation_id: str) -> ActiveRun | None:
        return self._runs.get(conversation_id)

    def by_run(self, run_id: str) -> ActiveRun | None:
        return next((r for r in self._runs.values() if r.run_id == run_id), None)

    def remove(self, run: ActiveRun) -> None:
        if self._runs.get(run.conversation_id) is run:
            del self._runs[run.conversation_id]
        run.close()
        for listener in self._ended:
            try:
                listener(run)
            except Exception:  # what follows a run never breaks the run
                log.exception("a listener of ended runs failed", extra=run.context)

    def all(self) -> list[ActiveRun]:
        return list(self._runs.values())
