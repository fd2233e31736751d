"""ScheduleStore in memory: dicts behind the run store's lock, so a firing's claim and its
run's insert are one step, as in the durable stores' one transaction."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from domain.errors import FiringTaken
from domain.schedules import Firing, FiringClaim, Schedule
from ports.schedules import ScheduleStore


class InMemorySchedules(ScheduleStore):
    _lock: threading.Lock

    def _schedules_init(self) -> None:
        self._schedules: dict[str, Schedule] = {}
        self._firings: dict[tuple[str, datetime], Firing] = {}
        self._ticked: datetime | None = None

    def _check_claim(self, claim: FiringClaim) -> None:
        """FiringTaken unless `claim` may be taken now (ports.schedules); changes nothing."""
        if claim.redo:
            firing = self._firings.get((claim.schedule_id, claim.scheduled_for))
            if firing is None or not firing.redo:
                raise FiringTaken()
            return
        found = self._schedules.get(claim.schedule_id)
        if found is None or not found.enabled or found.next_at != claim.due:
            raise FiringTaken()

    def _take_claim(self, claim: FiringClaim, run_id: str, conversation_id: str, queued: bool) -> None:
        key = (claim.schedule_id, claim.scheduled_for)
        if claim.redo:
            self._firings[key] = replace(self._firings[key], run_id=run_id, queued=queued, redo=False)
            return
        found = self._schedules[claim.schedule_id]
        self._schedules[found.id] = replace(
            found, next_at=claim.following, last_run_id=run_id, last_fired_for=claim.scheduled_for
        )
        self._firings[key] = Firing(claim.schedule_id, claim.scheduled_for, run_id, conversation_id, queued)

    def _firing_unsaved(self, run_id: str) -> None:
        """A run of a firing stopped before its message was saved: the firing is to redo."""
        for key, firing in self._firings.items():
            if firing.run_id == run_id and not firing.queued:
                self._firings[key] = replace(firing, redo=True)

    def _give_schedules(self, from_owner: str, to_owner: str) -> None:
        for sid, found in list(self._schedules.items()):
            if found.owner == from_owner:
                self._schedules[sid] = replace(found, owner=to_owner)

    async def put_schedule(self, schedule: Schedule) -> None:
        with self._lock:
            self._schedules[schedule.id] = schedule

    async def schedule(self, schedule_id: str, owner: str | None = None) -> Schedule | None:
        with self._lock:
            found = self._schedules.get(schedule_id)
        return found if found is not None and owner in (None, found.owner) else None

    async def schedules(self, owner: str | None = None) -> Sequence[Schedule]:
        with self._lock:
            found = [s for s in self._schedules.values() if owner in (None, s.owner)]
        return sorted(found, key=lambda s: (s.created_at, s.id))

    async def replace_schedule(self, schedule: Schedule, owner: str | None = None) -> bool:
        with self._lock:
            found = self._schedules.get(schedule.id)
            if found is None or owner not in (None, found.owner):
                return False
            self._schedules[schedule.id] = replace(schedule, owner=found.owner, created_at=found.created_at)
            return True

    async def delete_schedule(self, schedule_id: str, owner: str | None = None) -> bool:
        with self._lock:
            found = self._schedules.get(schedule_id)
            if found is None or owner not in (None, found.owner):
                return False
            del self._schedules[schedule_id]
            return True

    async def due(self, now: datetime, limit: int) -> Sequence[Schedule]:
        with self._lock:
            found = [s for s in self._schedules.values() if s.enabled and s.next_at is not None and s.next_at <= now]
        return sorted(found, key=lambda s: (s.next_at, s.id))[:limit]

    async def advance(self, schedule_id: str, expected: datetime, following: datetime | None) -> bool:
        with self._lock:
            found = self._schedules.get(schedule_id)
            if found is None or found.next_at != expected:
                return False
            self._schedules[schedule_id] = replace(found, next_at=following)
            return True

    async def tick(self, now: datetime) -> datetime | None:
        with self._lock:
            before = self._ticked
            self._ticked = now if before is None else max(before, now)
            return before

    async def redo_firings(self, limit: int) -> Sequence[Firing]:
        with self._lock:
            found = [f for f in self._firings.values() if f.redo and f.schedule_id in self._schedules]
        return sorted(found, key=lambda f: f.scheduled_for)[:limit]

    async def scheduled_times(self, run_ids: Sequence[str]) -> Mapping[str, datetime]:
        wanted = set(run_ids)
        with self._lock:
            return {f.run_id: f.scheduled_for for f in self._firings.values() if f.run_id in wanted}

    async def firings(self, schedule_id: str, limit: int) -> Sequence[Firing]:
        with self._lock:
            found = [f for f in self._firings.values() if f.schedule_id == schedule_id]
        return sorted(found, key=lambda f: f.scheduled_for, reverse=True)[:limit]
