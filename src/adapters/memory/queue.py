"""MessageQueue in memory: a list per conversation behind the run store's lock."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from domain.errors import ConversationNotFound, QueueFull
from domain.model import Conversation, Run, RunStatus
from domain.queue import QueuedMessage, QueueState, accepts_queue
from domain.schedules import FiringClaim
from ports.queue import MessageQueue
from ports.runs import RunFinish


class InMemoryQueue(MessageQueue):
    _lock: threading.Lock
    _conversations: dict[str, Conversation]
    _runs: dict[str, Run]
    _check_claim: Callable[[FiringClaim], None]  # adapters.memory.schedules, on the same store
    _take_claim: Callable[[FiringClaim, str, str, bool], None]

    def _queue_init(self) -> None:
        self._queue: dict[str, QueuedMessage] = {}  # id -> message

    def _latest(self, conversation_id: str) -> Run | None:
        raise NotImplementedError

    def _insert_running(self, run: Run, now: datetime) -> None:
        raise NotImplementedError

    def _forget_queue(self, conversation_id: str) -> None:
        for qid in [q.id for q in self._queue.values() if q.conversation_id == conversation_id]:
            del self._queue[qid]

    def _waiting(self, conversation_id: str) -> list[QueuedMessage]:
        found = (q for q in self._queue.values() if q.conversation_id == conversation_id)
        return sorted((q for q in found if q.state is QueueState.WAITING), key=lambda q: q.position)

    def _queued_count(self, conversation_id: str) -> int:
        return len(self._waiting(conversation_id))

    def _after_finish(self, run: Run, finish: RunFinish) -> QueuedMessage | None:
        """The queue's half of finish_run, under the lock: the run's claim, then the next start."""
        claim = next((q for q in self._queue.values() if q.run_id == run.id), None)
        if claim is not None:
            if finish.input_recorded:
                del self._queue[claim.id]
            else:
                front = min(q.position for q in self._queue.values() if q.conversation_id == run.conversation_id)
                self._queue[claim.id] = replace(claim, state=QueueState.WAITING, run_id=None, position=front - 1)
        if finish.then is not None and finish.status is RunStatus.COMPLETED:
            return self._claim_first(finish.then, finish.now)
        return None

    def _claim_first(self, run: Run, now: datetime) -> QueuedMessage | None:
        waiting = self._waiting(run.conversation_id)
        if not waiting:
            return None
        if waiting[0].id not in self._runs:
            run = replace(run, id=waiting[0].id)  # ports.queue.start_queued: the message's id, once
        self._insert_running(run, now)
        claimed = replace(waiting[0], state=QueueState.STARTED, run_id=run.id)
        self._queue[claimed.id] = claimed
        return claimed

    async def enqueue(self, message: QueuedMessage, limit: int, firing: FiringClaim | None = None) -> QueuedMessage | None:
        with self._lock:
            if message.conversation_id not in self._conversations:
                raise ConversationNotFound()
            if not accepts_queue(self._latest(message.conversation_id)):
                return None
            mine = [q for q in self._queue.values() if q.conversation_id == message.conversation_id]
            if sum(q.state is QueueState.WAITING for q in mine) >= limit:
                raise QueueFull()
            if message.steer:
                position = min((q.position for q in mine), default=1) - 1
            else:
                position = max((q.position for q in mine), default=0) + 1
            stored = replace(message, position=position, state=QueueState.WAITING, run_id=None)
            if firing is not None:
                self._check_claim(firing)
                self._take_claim(firing, stored.id, stored.conversation_id, True)
            self._queue[stored.id] = stored
            return stored

    async def queued(self, conversation_id: str) -> Sequence[QueuedMessage]:
        with self._lock:
            return self._waiting(conversation_id)

    async def claimed(self, run_id: str) -> QueuedMessage | None:
        with self._lock:
            return next((q for q in self._queue.values() if q.run_id == run_id), None)

    async def edit_queued(self, conversation_id: str, message_id: str, text: str) -> QueuedMessage | None:
        with self._lock:
            found = self._queue.get(message_id)
            if found is None or found.conversation_id != conversation_id or found.state is not QueueState.WAITING:
                return None
            self._queue[message_id] = found = replace(found, text=text)
            return found

    async def drop_queued(self, conversation_id: str, message_id: str) -> bool:
        with self._lock:
            found = self._queue.get(message_id)
            if found is None or found.conversation_id != conversation_id or found.state is not QueueState.WAITING:
                return False
            del self._queue[message_id]
            return True

    async def start_queued(self, run: Run, now: datetime, after: str | None) -> QueuedMessage | None:
        with self._lock:
            latest = self._latest(run.conversation_id)
            if (latest.id if latest else None) != after or (latest and latest.status is RunStatus.RUNNING):
                return None
            return self._claim_first(run, now)

    async def steered(self, conversation_ids: Sequence[str]) -> set[str]:
        wanted = set(conversation_ids)
        with self._lock:
            return {
                q.conversation_id
                for q in self._queue.values()
                if q.steer and q.state is QueueState.WAITING and q.conversation_id in wanted
            }

    async def queued_conversations(self) -> Sequence[str]:
        with self._lock:
            started = {q.conversation_id for q in self._queue.values() if q.state is QueueState.STARTED}
            return sorted({q.conversation_id for q in self._queue.values()} - started)
