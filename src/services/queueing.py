"""Use cases of a message typed while a run works (domain.queue): queue it, steer the run
with it, roll the run back for it, edit or drop it while it waits, and start the queues
nothing else will drain. The store starts the next message of a completed run itself, in
the outcome's transaction (the kernel hands it the run, services.kernel), and the kernel
drains the queues nobody else will; this is the rest."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from domain.audit import Action
from domain.commands import Cancel, Edit, SendMessage, check_message
from domain.errors import InvalidInput, QueuedNotFound, SessionInProgress, ShuttingDown
from domain.model import RunStatus, RunTrigger, check_text, new_id
from domain.principals import LOCAL, Principal
from domain.queue import MAX_QUEUED, Multitask, QueuedMessage, rollback_point
from domain.schedules import FiringClaim
from ports.queue import MessageQueue
from services.audit import NO_AUDIT, AuditTrail
from services.handles import StartedRun, attach_webhook
from services.kernel import RunUseCases

log = logging.getLogger(__name__)

ENQUEUE_TRIES = 5  # a run ending while a message is queued behind it: look again this often


class QueueService:
    """`service` starts and cancels runs; its kernel says which are live."""

    def __init__(
        self, service: RunUseCases, queue: MessageQueue, max_queued: int = MAX_QUEUED, audit: AuditTrail = NO_AUDIT
    ) -> None:
        self.audit = audit  # a dropped message is audited (it is gone: no run, no checkpoint says so)
        self.service = service
        self.queue = queue
        self.max_queued = max_queued

    async def send(self, command: SendMessage, *, by: Principal = LOCAL) -> StartedRun | QueuedMessage:
        """A message with a multitask strategy (domain.queue.Multitask), as `by`."""
        if command.multitask is Multitask.ENQUEUE:
            return await self.enqueue(command, by=by)
        if command.multitask is Multitask.INTERRUPT:
            return await self.enqueue(command, steer=True, by=by)
        if command.multitask is Multitask.ROLLBACK:
            return await self.rollback(command, by=by)
        return await self.service.start(command, by=by)

    async def enqueue(
        self,
        command: SendMessage,
        steer: bool = False,
        *,
        by: Principal = LOCAL,
        firing: FiringClaim | None = None,
        trigger: RunTrigger = RunTrigger.USER,
    ) -> StartedRun | QueuedMessage:
        """Queue the message behind the conversation's active (or waiting) run, committed
        before this returns; with no run active, start it at once (as `start` would).
        `firing`: a schedule's, claimed with the message or the run (ports.schedules).
        `steer`: first in line, and the active run hands over to it at its next step
        boundary (a tool call in flight finishes and its result is kept)."""
        service = self.service
        cid = command.conversation_id
        if cid is None:
            return await service.start(command, trigger, by=by, firing=firing)
        await service.visible(cid, by)  # nothing is queued on another user's conversation
        if trigger.limited:
            await service.admit(by)
        kernel = service.kernel
        if kernel.draining:
            raise ShuttingDown()
        for _ in range(ENQUEUE_TRIES):
            message = QueuedMessage(new_id(), cid, 0, command.text.strip(), kernel.deps.clock(), steer=steer)
            await attach_webhook(kernel.deps.stores, message.id, cid, command.webhook)
            queued = await self.queue.enqueue(message, self.max_queued, firing)
            if queued is not None:
                ctx = {"conversation_id": cid}
                log.info("message %s %s at %d", queued.id, "steers" if steer else "queued", queued.position, extra=ctx)
                active = kernel.live.get(cid)
                if steer and active is not None:  # another process's run learns it from its supervisor
                    active.request_steer()
                return queued
            try:
                return await service.start(command, trigger, by=by, firing=firing)
            except SessionInProgress:
                # a run started (or has not left this process's hub yet): queue behind it
                await asyncio.sleep(kernel.deps.poll_seconds)
        raise SessionInProgress()

    async def rollback(self, command: SendMessage, *, by: Principal = LOCAL) -> StartedRun | QueuedMessage:
        """Cancel the active run and answer the message on a new branch forked before the
        rolled-back turn: its user message is replaced, the turn itself stays a branch
        (never deleted). With no run active, the message is simply sent."""
        service = self.service
        cid = command.conversation_id
        if cid is not None:
            await service.visible(cid, by)
        live = await service.kernel.live_run(cid) if cid is not None else None
        if cid is None or live is None:
            return await service.start(command, by=by)
        stopped = await service.cancel(Cancel(cid), by=by)
        if stopped.status is RunStatus.RUNNING:
            raise SessionInProgress()  # its owner did not stop it within the wait
        thread = await service.kernel.deps.stores.checkpoints.get_thread(cid)
        at = rollback_point(thread.messages, live.base_count)
        log.info("rolled back run %s (its turn kept as a branch)", stopped.run_id, extra={"conversation_id": cid})
        if at is None:
            return await service.start(SendMessage(command.text, cid, command.settings), by=by)
        return await service.start(Edit(cid, at, command.text, command.settings), by=by)

    async def steered(self, conversation_ids: Sequence[str]) -> set[str]:
        return await self.queue.steered(conversation_ids)

    async def waiting(self, conversation_id: str, *, by: Principal = LOCAL) -> Sequence[QueuedMessage]:
        if not by.sees_all:
            await self.service.visible(conversation_id, by)
        return await self.queue.queued(conversation_id)

    async def edit(self, conversation_id: str, message_id: str, text: object, *, by: Principal = LOCAL) -> QueuedMessage:
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("Message is required")
        check_message(text)
        if not by.sees_all:
            await self.service.visible(conversation_id, by)
        edited = await self.queue.edit_queued(conversation_id, check_text(message_id, "Id"), text.strip())
        if edited is None:
            raise QueuedNotFound()
        return edited

    async def drop(self, conversation_id: str, message_id: str, *, by: Principal = LOCAL) -> None:
        if not by.sees_all:
            await self.service.visible(conversation_id, by)
        if not await self.queue.drop_queued(conversation_id, check_text(message_id, "Id")):
            raise QueuedNotFound()
        await self.audit.record(Action.QUEUED_DROPPED, conversation_id, message_id)
