"""The run store in memory: the same contract as SQLite (RunRepository, RunEventLog,
RunSignals, ToolJournal), for unit tests and `:memory:` use.

Lease times come from `clock` (the "store's clock"), which tests may drive by hand."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from adapters.memory.approvals import InMemoryApprovals
from adapters.memory.metadata import InMemoryMetadata
from adapters.memory.organise import InMemoryOrganising
from adapters.memory.queue import InMemoryQueue
from adapters.memory.schedules import InMemorySchedules
from adapters.memory.signals import InMemorySignals
from adapters.memory.webhooks import InMemoryWebhooks
from adapters.storage.event_rows import pack, unpack
from domain.errors import ConversationNotFound, SessionInProgress, UserLimitReached
from domain.lifecycle import GIVE_UP
from domain.model import Conversation, Run, RunError, RunOwner, RunStatus, TitleSource, iso, utc_now
from domain.models import ChatSettings
from domain.organise import Shown
from domain.principals import BOOTSTRAP_ID
from domain.queue import QueuedMessage
from domain.schedules import FiringClaim
from ports.events import EventBatch, RunEventLog
from ports.journal import JournalEntry
from ports.runs import LoadCap, RunFinish, RunRepository


def _ms(ts: datetime) -> datetime:
    # Stored times have millisecond precision, as in SQLite; keep the fake faithful.
    return ts.replace(microsecond=ts.microsecond // 1000 * 1000)


@dataclass
class _Waiter:
    loop: asyncio.AbstractEventLoop
    woken: asyncio.Event


class InMemoryRunStore(
    InMemoryApprovals,
    InMemoryQueue,
    InMemorySchedules,
    InMemoryWebhooks,
    InMemoryMetadata,
    InMemoryOrganising,
    InMemorySignals,
    RunRepository,
    RunEventLog,
):
    """Plain dicts behind one lock (never held across an await). Event data goes through
    JSON, as in SQLite, so what is not JSON-encodable fails here too."""

    def __init__(self, clock: Callable[[], datetime] = utc_now) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._conversations: dict[str, Conversation] = {}
        self._runs: dict[str, Run] = {}  # insertion order is the tie-breaker
        self._cancels: set[str] = set()
        self._events: dict[str, dict[int, tuple[str, str]]] = {}  # run -> seq -> (event, json)
        self._journal: dict[str, tuple[str, JournalEntry]] = {}  # key -> (conversation, entry)
        self._waiters: dict[str, list[_Waiter]] = {}
        self._approvals_init()
        self._queue_init()
        self._metadata_init()
        self._organise_init()
        self._schedules_init()
        self._webhooks_init()

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass

    def counts(self) -> tuple[int, int]:
        """(conversations, runs) stored, for the maintenance's stats."""
        with self._lock:
            return len(self._conversations), len(self._runs)

    # --- conversations -------------------------------------------------------------------

    async def create_conversation(
        self,
        conversation_id: str,
        title: str,
        now: datetime,
        settings: ChatSettings = ChatSettings(),  # noqa: B008
        message_count: int = 0,
        owner: str = BOOTSTRAP_ID,
        title_by: TitleSource = TitleSource.MESSAGE,
        temporary: bool = False,
    ) -> Conversation:
        with self._lock:
            if conversation_id in self._conversations:
                raise ValueError(f"conversation {conversation_id} exists")
            conv = Conversation(
                conversation_id,
                title,
                _ms(now),
                _ms(now),
                message_count,
                model=settings.model,
                system=settings.system,
                owner=owner,
                system_mode=settings.system_mode,
                title_by=title_by,
                temporary=temporary,
            )
            self._conversations[conversation_id] = conv
            return conv

    async def set_chat_settings(self, conversation_id: str, settings: ChatSettings) -> bool:
        with self._lock:
            conv = self._conversations.get(conversation_id)
            if conv is None:
                return False
            self._conversations[conversation_id] = replace(
                conv, model=settings.model, system=settings.system, system_mode=settings.system_mode
            )
            return True

    def _latest(self, conversation_id: str) -> Run | None:
        latest: Run | None = None
        for run in self._runs.values():
            if run.conversation_id == conversation_id and (latest is None or run.started_at >= latest.started_at):
                latest = run
        return latest

    def _summary(self, conv: Conversation) -> Conversation:
        run = self._latest(conv.id)
        queued = self._queued_count(conv.id)
        if run is None:
            return replace(conv, status=None, error=None, queued=queued)
        return replace(conv, status=run.status, error=run.error, queued=queued)

    async def get_conversation(self, conversation_id: str) -> Conversation | None:
        with self._lock:
            conv = self._conversations.get(conversation_id)
            return self._summary(conv) if conv else None

    async def list_conversations(
        self,
        limit: int | None = None,
        before: tuple[datetime, str] | None = None,
        query: str = "",
        owner: str | None = None,
        shown: Shown = Shown(),  # noqa: B008 - a frozen value
    ) -> Sequence[Conversation]:
        with self._lock:
            items = sorted(
                (c for c in self._conversations.values() if not c.temporary and shown.keeps(c.pinned, c.archived)),
                key=lambda c: (iso(c.updated_at), c.id),
                reverse=True,
            )
            if owner is not None:
                items = [c for c in items if c.owner == owner]
            if query:
                items = [c for c in items if query.casefold() in c.title.casefold()]
            if before is not None:
                cursor = (iso(before[0]), before[1])
                items = [c for c in items if (iso(c.updated_at), c.id) < cursor]
            if limit is not None:
                items = items[:limit]
            return [self._summary(c) for c in items]

    async def owner_load(self, owner: str) -> int:
        with self._lock:
            return self._load(owner)

    def _load(self, owner: str) -> int:
        mine = {c.id for c in self._conversations.values() if c.owner == owner}
        running = sum(1 for r in self._runs.values() if r.conversation_id in mine and r.status is RunStatus.RUNNING)
        return running + sum(self._queued_count(cid) for cid in mine)

    async def give_conversations(self, from_owner: str, to_owner: str) -> int:
        with self._lock:
            mine = [c for c in self._conversations.values() if c.owner == from_owner]
            for conv in mine:
                self._conversations[conv.id] = replace(conv, owner=to_owner)
            self._give_schedules(from_owner, to_owner)
            return len(mine)

    async def find_conversations(self, id_prefix: str, limit: int, owner: str | None = None) -> Sequence[Conversation]:
        with self._lock:
            items = [
                c
                for c in self._conversations.values()
                if c.id.startswith(id_prefix) and (owner is None or c.owner == owner) and not c.temporary
            ]
            items.sort(key=lambda c: (iso(c.updated_at), c.id), reverse=True)
            return [self._summary(c) for c in items[:limit]]

    async def restore_conversation(self, conversation_id: str, message_count: int, updated_at: datetime) -> bool:
        with self._lock:
            conv = self._conversations.get(conversation_id)
            if conv is None:
                return False
            self._conversations[conversation_id] = replace(conv, message_count=message_count, updated_at=_ms(updated_at))
            return True

    async def rename_conversation(self, conversation_id: str, title: str, now: datetime) -> bool:
        with self._lock:
            conv = self._conversations.get(conversation_id)
            if conv is None:
                return False
            self._conversations[conversation_id] = replace(conv, title=title, updated_at=_ms(now), title_by=TitleSource.USER)
            return True

    async def delete_conversation(self, conversation_id: str) -> bool:
        with self._lock:
            if conversation_id not in self._conversations:
                return False
            runs = [r for r in self._runs.values() if r.conversation_id == conversation_id]
            if any(r.status is RunStatus.RUNNING for r in runs):
                raise SessionInProgress()
            for run in runs:
                del self._runs[run.id]
                self._events.pop(run.id, None)
                self._cancels.discard(run.id)
            for key in [k for k, (cid, _) in self._journal.items() if cid == conversation_id]:
                del self._journal[key]
            self._forget_approvals(conversation_id)
            self._forget_metadata(conversation_id)
            self._forget_webhooks(conversation_id)
            self._forget_queue(conversation_id)
            self._forget_organising(conversation_id)
            del self._conversations[conversation_id]
            return True

    # --- runs ----------------------------------------------------------------------------

    def _expired(self, run: Run, lease_seconds: float) -> Run:
        expired = (
            lease_seconds > 0
            and run.status is RunStatus.RUNNING
            and (run.heartbeat_at is None or run.heartbeat_at < _ms(self.clock()) - timedelta(seconds=lease_seconds))
        )
        return replace(run, lease_expired=expired)

    async def start_run(
        self,
        run: Run,
        now: datetime,
        flushed_by_input: bool = False,
        cap: LoadCap | None = None,
        firing: FiringClaim | None = None,
    ) -> None:
        with self._lock:
            if cap is not None and self._load(cap.owner) >= cap.limit:
                raise UserLimitReached()
            if firing is not None:
                self._check_claim(firing)
            self._insert_running(run, now)
            if firing is not None:
                self._take_claim(firing, run.id, run.conversation_id, False)

    def _insert_running(self, run: Run, now: datetime) -> None:
        if any(r.conversation_id == run.conversation_id and r.status is RunStatus.RUNNING for r in self._runs.values()):
            raise SessionInProgress()
        conv = self._conversations.get(run.conversation_id)
        if conv is None:
            raise ConversationNotFound()
        self._runs[run.id] = replace(
            run,
            status=RunStatus.RUNNING,
            started_at=_ms(run.started_at),
            finished_at=None,
            error_code=None,
            error_message=None,
            heartbeat_at=_ms(self.clock()),
            lease_expired=False,
        )
        # the run's own message is committed with it: the list counts it while it runs
        self._conversations[conv.id] = replace(conv, updated_at=_ms(now), message_count=max(conv.message_count, run.base_count))

    async def finish_run(
        self,
        run_id: str,
        finish: RunFinish,
        owner: RunOwner | None = None,
        heartbeat: datetime | None = None,
    ) -> bool | QueuedMessage:
        move = finish.transition
        data = json.dumps(finish.event.data) if finish.event else ""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.status is not move.source:
                return False
            if owner is not None and (run.owner is None or run.owner.instance != owner.instance):
                return False
            if heartbeat is not None and (run.heartbeat_at is None or iso(run.heartbeat_at) != iso(heartbeat)):
                return False
            error = finish.error
            self._runs[run_id] = replace(
                run,
                status=move.target,
                finished_at=_ms(finish.now),
                error_code=error.code if error else None,
                error_message=error.message if error else None,
            )
            conv = self._conversations[run.conversation_id]
            count = conv.message_count if finish.message_count is None else finish.message_count
            self._conversations[conv.id] = replace(conv, updated_at=_ms(finish.now), message_count=count)
            for seq, name, packed in pack(finish.events):
                self._events.setdefault(run_id, {}).setdefault(seq, (name, json.dumps(packed)))
            if finish.event is not None:
                events = self._events.setdefault(run_id, {})
                seq = max(finish.event_id or 0, max(events, default=0) + 1)
                events[seq] = (finish.event.event, data)
                self._wake(run_id)
            if not finish.input_recorded:
                self._firing_unsaved(run_id)
            self._record_delivery(run_id, run.conversation_id, finish)
            return self._after_finish(run, finish) or True

    async def give_up(self, run_id: str, error: RunError, now: datetime) -> bool:
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.status is not GIVE_UP.source:
                return False
            self._runs[run_id] = replace(
                run,
                status=GIVE_UP.target,
                error_code=error.code,
                error_message=error.message,
                finished_at=_ms(now),
            )
            return True

    async def get_run(self, run_id: str) -> Run | None:
        with self._lock:
            run = self._runs.get(run_id)
            return self._expired(run, 0) if run else None

    async def latest_run(self, conversation_id: str, lease_seconds: float = 0.0) -> Run | None:
        with self._lock:
            run = self._latest(conversation_id)
            return self._expired(run, lease_seconds) if run else None

    async def recent_runs(self, conversation_id: str, limit: int) -> Sequence[Run]:
        with self._lock:
            runs = [r for r in self._runs.values() if r.conversation_id == conversation_id]
        # newest first; among equal start times the later insert first, as in SQLite
        runs = sorted(reversed(runs), key=lambda r: r.started_at, reverse=True)
        return [self._expired(r, 0) for r in runs[:limit]]

    async def running_runs(self, lease_seconds: float = 0.0) -> Sequence[Run]:
        with self._lock:
            running = [r for r in self._runs.values() if r.status is RunStatus.RUNNING]
            return [self._expired(r, lease_seconds) for r in sorted(running, key=lambda r: r.started_at)]

    async def interrupted_conversations(self) -> Sequence[Run]:
        with self._lock:
            latest = [self._latest(cid) for cid in self._conversations]
            found = [r for r in latest if r is not None and r.status is RunStatus.INTERRUPTED]
            return [self._expired(r, 0) for r in sorted(found, key=lambda r: r.started_at)]

    async def renew(self, owner: RunOwner, run_ids: Sequence[str]) -> set[str]:
        renewed: set[str] = set()
        with self._lock:
            now = _ms(self.clock())
            for rid in run_ids:
                run = self._runs.get(rid)
                if (
                    run is not None
                    and run.status is RunStatus.RUNNING
                    and run.owner is not None
                    and run.owner.instance == owner.instance
                ):
                    self._runs[rid] = replace(run, heartbeat_at=now)
                    renewed.add(rid)
        return renewed

    # --- RunEventLog ---------------------------------------------------------------------

    async def append(self, batches: Mapping[str, EventBatch]) -> None:
        # packed as the database stores do (adapters.storage.event_rows): the same rows
        encoded = {rid: [(seq, name, json.dumps(data)) for seq, name, data in pack(batch)] for rid, batch in batches.items()}
        with self._lock:
            for rid, batch in encoded.items():
                run = self._runs.get(rid)
                if run is None or run.status is not RunStatus.RUNNING or not batch:
                    continue
                events = self._events.setdefault(rid, {})
                for seq, name, data in batch:
                    events.setdefault(seq, (name, data))
                self._wake(rid)

    async def read(self, run_id: str, after: int) -> EventBatch:
        with self._lock:
            return self._read(run_id, after)

    def _read(self, run_id: str, after: int) -> EventBatch:
        events = self._events.get(run_id, {})
        rows = ((seq, name, json.loads(data)) for seq, (name, data) in sorted(events.items()) if seq > after)
        return unpack(rows, after)

    async def wait(self, run_id: str, after: int, timeout: float) -> EventBatch:
        waiter = _Waiter(asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            events = self._read(run_id, after)
            if events or timeout <= 0:
                return events
            self._waiters.setdefault(run_id, []).append(waiter)
        try:
            await asyncio.wait_for(waiter.woken.wait(), timeout)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                waiting = self._waiters.get(run_id, [])
                if waiter in waiting:
                    waiting.remove(waiter)
                if not waiting:
                    self._waiters.pop(run_id, None)
        return await self.read(run_id, after)

    def _wake(self, run_id: str) -> None:
        # called under the lock, possibly from another thread than a waiter's loop
        for waiter in self._waiters.pop(run_id, []):
            waiter.loop.call_soon_threadsafe(waiter.woken.set)

    async def prune(self, retention_seconds: float) -> int:
        with self._lock:
            cutoff = _ms(self.clock()) - timedelta(seconds=retention_seconds)
            deleted = 0
            for rid in list(self._events):
                run = self._runs.get(rid)
                if run is not None and run.finished_at is not None and run.finished_at < cutoff:
                    deleted += len(self._events.pop(rid))
            return deleted
