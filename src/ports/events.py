"""RunEventLog: the stream events of runs, persisted so any process can follow any run."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Protocol

from domain.events import StreamEvent

EventBatch = Sequence[tuple[int, StreamEvent]]


class RunEventLog(Protocol):
    """Events by run, with the ids the run's owner gave them (1, 2, 3… per run).

    The terminal event (`end` or `chat-error`) is written with the run's outcome
    (RunRepository.finish_run), so a follower always gets one, even when the owner died.
    Events are kept for a while after their run ends, then pruned. Never blocks the loop.
    A store may keep several events in one record (consecutive tokens of one append, see
    adapters.storage.event_rows); `read` gives each event with its own id all the same.
    """

    @abstractmethod
    async def append(self, batches: Mapping[str, EventBatch]) -> None:
        """Persist events by run id, in one write. Events of a run that is no longer
        running are dropped (a stale owner writes nothing). Ids already stored are ignored."""

    @abstractmethod
    async def read(self, run_id: str, after: int) -> EventBatch:
        """The run's stored events with id > after, in id order."""

    @abstractmethod
    async def wait(self, run_id: str, after: int, timeout: float) -> EventBatch:
        """Like read, but waits up to `timeout` seconds for at least one event; () when
        none came. May return early with () (a caller loops)."""

    @abstractmethod
    async def prune(self, retention_seconds: float) -> int:
        """Delete the events of runs that finished more than `retention_seconds` ago (by
        the store's clock); return how many records were deleted."""
