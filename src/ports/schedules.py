"""ScheduleStore: the users' schedules and their firings, shared by every process on the
store (domain.schedules has the rules).

Exactly once per firing: a firing is claimed in the transaction that creates its run
(`RunRepository.start_run(..., firing=)`) or queues its message (`MessageQueue.enqueue(...,
firing=)`), by the store's `claim_firing` semantics below, so two processes never start
the same firing and a crash leaves either both the claim and the run or neither. A run
that stopped before its message was saved hands its firing back (`RunRepository.finish_run`
with `input_recorded` False marks it `redo`), and any live process starts it again."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

from domain.schedules import Firing, Schedule

# What the claim does, in the run's (or the queued message's) own transaction:
#   not redo: the schedule's next_at goes from `scheduled_for` to `following` (a
#     compare-and-set, only while it is enabled), and a firing row (schedule, time, run id,
#     conversation) is inserted; FiringTaken, storing nothing, when the compare fails.
#   redo: the firing row in state redo is taken by the new run; FiringTaken otherwise.


class ScheduleStore(Protocol):
    """Every method is atomic and takes effect for every process as soon as it returns.
    `owner` given: only that user's schedules are seen or changed (another user's answers
    as unknown); None: everyone's."""

    @abstractmethod
    async def put_schedule(self, schedule: Schedule) -> None:
        """Insert a new schedule (its id unused)."""

    @abstractmethod
    async def schedule(self, schedule_id: str, owner: str | None = None) -> Schedule | None:
        """The schedule, or None when unknown (or not `owner`'s)."""

    @abstractmethod
    async def schedules(self, owner: str | None = None) -> Sequence[Schedule]:
        """The schedules, oldest first (then by id)."""

    @abstractmethod
    async def replace_schedule(self, schedule: Schedule, owner: str | None = None) -> bool:
        """Write every field of an existing schedule but its id, owner and created_at
        (its `next_at` as given: a firing claimed on the old one then fails its compare);
        False when unknown (or not `owner`'s)."""

    @abstractmethod
    async def delete_schedule(self, schedule_id: str, owner: str | None = None) -> bool:
        """Delete the schedule (its firings stay, for the runs they name); False when
        unknown (or not `owner`'s)."""

    @abstractmethod
    async def due(self, now: datetime, limit: int) -> Sequence[Schedule]:
        """At most `limit` enabled schedules whose `next_at` is at or before `now`, the
        most overdue first. Only reads."""

    @abstractmethod
    async def advance(self, schedule_id: str, expected: datetime, following: datetime | None) -> bool:
        """Set `next_at` to `following` if it is still `expected` (skipping firings
        without running them: catch-up skip); False, changing nothing, otherwise."""

    @abstractmethod
    async def tick(self, now: datetime) -> datetime | None:
        """Record that a scheduler ticked at `now` and return the latest tick recorded
        before (None: never), atomically: what tells a missed firing from a late one."""

    @abstractmethod
    async def redo_firings(self, limit: int) -> Sequence[Firing]:
        """At most `limit` firings in state redo (oldest first): to be started again.
        Only reads."""

    @abstractmethod
    async def scheduled_times(self, run_ids: Sequence[str]) -> Mapping[str, datetime]:
        """The scheduled time of each of the runs (or queued messages) a firing started;
        the others are left out. Only reads."""

    @abstractmethod
    async def firings(self, schedule_id: str, limit: int) -> Sequence[Firing]:
        """The schedule's latest `limit` firings, newest first. Only reads."""
