"""Use cases of a user's schedules (domain.schedules): make, list, read, edit (pause,
resume), delete, and the firings a schedule started. A schedule is its owner's as a
conversation is: another user's answers as unknown (ScheduleNotFound: 404 alike)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from domain.errors import InvalidInput, NotSupported, ScheduleNotFound
from domain.model import Message, Run, RunTrigger, UserMessage, new_id, utc_now
from domain.principals import LOCAL, Principal, owner_filter
from domain.schedules import Firing, Schedule, ScheduleEdit, ScheduleSpec, check_schedule_id
from ports.schedules import ScheduleStore
from services.kernel import RunUseCases
from services.webhooks import WebhookService

log = logging.getLogger(__name__)

MAX_SCHEDULES = 100  # per user: each one is read on every tick it is due
MARKED_RUNS = 200  # the latest runs of a conversation whose messages may be marked as a schedule's


class ScheduleService:
    def __init__(
        self,
        store: ScheduleStore,
        runs: RunUseCases,
        clock: Callable[[], datetime] = utc_now,
        webhooks: WebhookService | None = None,
    ) -> None:
        self.store = store
        self.runs = runs
        self.clock = clock
        self.webhooks = webhooks  # checks a schedule's webhook (None: a schedule may name none)

    async def create(self, spec: ScheduleSpec, *, by: Principal = LOCAL) -> Schedule:
        """A new schedule of `by`'s, armed for its first firing. Its conversation, when
        named, must be one `by` reaches (ConversationNotFound otherwise) and their own: the
        firings send as the schedule's owner (an admin who sees every conversation may not
        schedule messages into another user's)."""
        if spec.conversation_id is not None:
            found = await self.runs.visible(spec.conversation_id, by)
            if found.owner != by.user_id:
                raise InvalidInput("A schedule sends as its owner: name one of your own conversations")
        await self._check_webhook(spec.webhook)
        if len(await self.store.schedules(by.user_id)) >= MAX_SCHEDULES:
            raise InvalidInput(f"A user may have at most {MAX_SCHEDULES} schedules")
        schedule = spec.schedule(new_id(), by.user_id, self.clock())
        if schedule.next_at is None and schedule.enabled:
            raise InvalidInput("The schedule would never fire (its time, or its end date, has passed)")
        await self.store.put_schedule(schedule)
        await self._armed(schedule)
        log.info("schedule made, first firing %s", schedule.next_at, extra={"schedule_id": schedule.id})
        return schedule

    async def list(self, *, by: Principal = LOCAL) -> Sequence[Schedule]:
        return await self.store.schedules(owner_filter(by))

    async def get(self, schedule_id: object, *, by: Principal = LOCAL) -> Schedule:
        found = await self.store.schedule(check_schedule_id(schedule_id), owner_filter(by))
        if found is None:
            raise ScheduleNotFound()
        return found

    async def edit(self, schedule_id: object, edit: ScheduleEdit, *, by: Principal = LOCAL) -> Schedule:
        """Apply `edit` (pause: enabled False; resume: enabled True, from the next firing)."""
        found = await self.get(schedule_id, by=by)
        await self._check_webhook(edit.webhook)
        edited = edit.apply(found, self.clock())
        if not await self.store.replace_schedule(edited, owner_filter(by)):
            raise ScheduleNotFound()
        await self._armed(edited)
        log.info("schedule edited, next firing %s", edited.next_at, extra={"schedule_id": edited.id})
        return edited

    async def _check_webhook(self, url: str | None) -> None:
        """WebhookNotAllowed for a URL the operator does not allow (WEBHOOK_ALLOWED_HOSTS)."""
        if url is None:
            return
        if self.webhooks is None:
            raise NotSupported("This server calls no webhooks")
        await self.webhooks.check(url)

    async def _armed(self, schedule: Schedule) -> None:
        """Record a scheduler tick at the arming: the schedulers tick only while some
        schedule is enabled, so without it a first firing due before their next tick would
        look missed (services.scheduler)."""
        if schedule.enabled:
            await self.store.tick(self.clock())

    async def delete(self, schedule_id: object, *, by: Principal = LOCAL) -> None:
        if not await self.store.delete_schedule(check_schedule_id(schedule_id), owner_filter(by)):
            raise ScheduleNotFound()

    async def scheduled_times(self, run_ids: Sequence[str]) -> Mapping[str, datetime]:
        """The scheduled time of each of these runs that a firing started (the caller has
        checked the runs are the principal's to see)."""
        return await self.store.scheduled_times(run_ids)

    async def firings(self, schedule_id: object, limit: int = 50, *, by: Principal = LOCAL) -> Sequence[Firing]:
        """The schedule's latest firings, newest first (each with its run's id)."""
        found = await self.get(schedule_id, by=by)
        return await self.store.firings(found.id, limit)

    async def last_runs(self, schedules: Sequence[Schedule]) -> Mapping[str, Run]:
        """The run each schedule last started, by schedule id (left out: none yet, or its
        message still queued); the schedules are the principal's own, as `list` gave them."""
        runs = self.runs.kernel.deps.stores.runs
        found = {s.id: await runs.get_run(s.last_run_id) for s in schedules if s.last_run_id}
        return {sid: run for sid, run in found.items() if run is not None}

    async def sent_by_schedules(self, conversation_id: str, messages: Sequence[Message]) -> Mapping[int, datetime]:
        """The messages of the conversation (its thread, as read) that a schedule's firing
        sent, by index, with the firing's time: a run's own message is the last before its
        output (`base_count`). Among its latest MARKED_RUNS runs; the caller has checked the
        conversation is the principal's to see."""
        recent = await self.runs.kernel.deps.stores.runs.recent_runs(conversation_id, MARKED_RUNS)
        runs = [r for r in recent if r.trigger in (RunTrigger.SCHEDULE, RunTrigger.QUEUE)]  # a queued firing starts as QUEUE
        times = await self.store.scheduled_times([r.id for r in runs]) if runs else {}
        marks = {r.base_count - 1: times[r.id] for r in runs if r.id in times}
        return {i: at for i, at in marks.items() if 0 <= i < len(messages) and isinstance(messages[i], UserMessage)}
