"""The runs this process executes: their tasks, event buffers and subscribers.

Event ids are 1, 2, 3… per run. The buffer keeps every event of the live run so a late or
reconnecting subscriber replays what it missed (Last-Event-ID); it goes with the run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from domain.events import StreamEvent
from domain.model import RunStatus

log = logging.getLogger(__name__)

TERMINAL_EVENTS = frozenset({"end", "chat-error"})


@dataclass
class ActiveRun:
    run_id: str
    conversation_id: str
    events: list[tuple[int, StreamEvent]] = field(default_factory=list)
    subscribers: set[asyncio.Queue[tuple[int, StreamEvent] | None]] = field(default_factory=set)
    task: asyncio.Task[None] | None = None
    stop_reason: RunStatus | None = None  # why the task was cancelled: cancelled or interrupted
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    input_recorded: asyncio.Event = field(default_factory=asyncio.Event)
    failure: BaseException | None = None  # what stopped the run before its input was saved
    base_count: int = 0  # thread messages before this run's output (its own message included)

    def publish(self, event: StreamEvent) -> int:
        event_id = len(self.events) + 1
        self.events.append((event_id, event))
        for queue in list(self.subscribers):
            try:
                queue.put_nowait((event_id, event))
            except Exception:  # a broken subscriber must never stop the run
                log.warning("dropping a subscriber of run %s", self.run_id, exc_info=True)
                self.subscribers.discard(queue)
        return event_id

    async def subscribe(self, after: int = 0) -> AsyncIterator[tuple[int, StreamEvent]]:
        """Replay buffered events with id > after, then follow live ones until the run's
        terminal event (`end` or `chat-error`)."""
        queue: asyncio.Queue[tuple[int, StreamEvent] | None] = asyncio.Queue()
        replay = [e for e in self.events if e[0] > after]
        last = replay[-1][0] if replay else after
        ended = self.finished.is_set()  # then the buffer already holds every event
        if not ended:
            self.subscribers.add(queue)  # from here on, close() will wake this queue
        try:
            for item in replay:
                yield item
                if item[1].event in TERMINAL_EVENTS:
                    return
            if ended:
                return
            while True:
                item = await queue.get()
                if item is None:
                    return
                if item[0] <= last:
                    continue
                yield item
                if item[1].event in TERMINAL_EVENTS:
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

    def add(self, run: ActiveRun) -> None:
        self._runs[run.conversation_id] = run

    def get(self, conversation_id: str) -> ActiveRun | None:
        return self._runs.get(conversation_id)

    def remove(self, run: ActiveRun) -> None:
        if self._runs.get(run.conversation_id) is run:
            del self._runs[run.conversation_id]
        run.close()

    def all(self) -> list[ActiveRun]:
        return list(self._runs.values())
