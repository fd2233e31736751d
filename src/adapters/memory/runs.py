"""RunRepository in memory: the same contract as SQLite, for unit tests and `:memory:` use."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime

from domain.errors import SessionInProgress
from domain.model import Conversation, Run, RunError, RunStatus, iso
from ports.journal import JournalEntry, ToolJournal
from ports.runs import RunRepository


def _ms(ts: datetime) -> datetime:
    # Stored times have millisecond precision, as in SQLite; keep the fakes faithful.
    return ts.replace(microsecond=ts.microsecond // 1000 * 1000)


class InMemoryRunRepository(RunRepository, ToolJournal):
    def __init__(self) -> None:
        self._journal: dict[str, tuple[str, JournalEntry]] = {}  # key -> (conversation, entry)
        self._conversations: dict[str, Conversation] = {}
        self._runs: dict[str, Run] = {}  # insertion order is the tie-breaker
        self._lock = threading.Lock()

    def create_conversation(self, conversation_id: str, title: str, now: datetime) -> Conversation:
        with self._lock:
            if conversation_id in self._conversations:
                raise ValueError(f"conversation {conversation_id} exists")
            conv = Conversation(conversation_id, title, _ms(now), _ms(now))
            self._conversations[conversation_id] = conv
            return conv

    def _latest(self, conversation_id: str) -> Run | None:
        latest: Run | None = None
        for run in self._runs.values():
            if run.conversation_id == conversation_id and (
                latest is None or run.started_at >= latest.started_at
            ):
                latest = run
        return latest

    def _summary(self, conv: Conversation) -> Conversation:
        run = self._latest(conv.id)
        if run is None:
            return replace(conv, status=None, error=None)
        error = RunError(run.error_code, run.error_message or "") if run.error_code else None
        return replace(conv, status=run.status, error=error)

    def get_conversation(self, conversation_id: str) -> Conversation | None:
        with self._lock:
            conv = self._conversations.get(conversation_id)
            return self._summary(conv) if conv else None

    def list_conversations(
        self, limit: int | None = None, before: tuple[datetime, str] | None = None
    ) -> Sequence[Conversation]:
        with self._lock:
            items = sorted(
                self._conversations.values(), key=lambda c: (iso(c.updated_at), c.id), reverse=True
            )
            if before is not None:
                cursor = (iso(before[0]), before[1])
                items = [c for c in items if (iso(c.updated_at), c.id) < cursor]
            if limit is not None:
                items = items[:limit]
            return [self._summary(c) for c in items]

    def rename_conversation(self, conversation_id: str, title: str, now: datetime) -> bool:
        with self._lock:
            conv = self._conversations.get(conversation_id)
            if conv is None:
                return False
            self._conversations[conversation_id] = replace(conv, title=title, updated_at=_ms(now))
            return True

    def delete_conversation(self, conversation_id: str) -> bool:
        with self._lock:
            if conversation_id not in self._conversations:
                return False
            runs = [r for r in self._runs.values() if r.conversation_id == conversation_id]
            if any(r.status is RunStatus.RUNNING for r in runs):
                raise SessionInProgress()
            for run in runs:
                del self._runs[run.id]
            for key in [k for k, (cid, _) in self._journal.items() if cid == conversation_id]:
                del self._journal[key]
            del self._conversations[conversation_id]
            return True

    def start_run(self, run: Run, now: datetime) -> None:
        with self._lock:
            conv = self._conversations.get(run.conversation_id)
            if conv is None:
                raise KeyError(run.conversation_id)
            if any(
                r.conversation_id == run.conversation_id and r.status is RunStatus.RUNNING
                for r in self._runs.values()
            ):
                raise SessionInProgress()
            self._runs[run.id] = replace(
                run, status=RunStatus.RUNNING, started_at=_ms(run.started_at), heartbeat_at=_ms(now)
            )
            self._conversations[conv.id] = replace(conv, updated_at=_ms(now))

    def finish_run(
        self,
        run_id: str,
        status: RunStatus,
        message_count: int | None,
        error: RunError | None,
        now: datetime,
    ) -> bool:
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.status is not RunStatus.RUNNING:
                return False
            self._runs[run_id] = replace(
                run,
                status=status,
                finished_at=_ms(now),
                error_code=error.code if error else None,
                error_message=error.message if error else None,
            )
            conv = self._conversations[run.conversation_id]
            count = conv.message_count if message_count is None else message_count
            self._conversations[conv.id] = replace(conv, updated_at=_ms(now), message_count=count)
            return True

    def get_run(self, run_id: str) -> Run | None:
        with self._lock:
            return self._runs.get(run_id)

    def latest_run(self, conversation_id: str) -> Run | None:
        with self._lock:
            return self._latest(conversation_id)

    def running_runs(self) -> Sequence[Run]:
        with self._lock:
            return [r for r in self._runs.values() if r.status is RunStatus.RUNNING]

    def heartbeat(self, run_ids: Sequence[str], now: datetime) -> None:
        with self._lock:
            for rid in run_ids:
                run = self._runs.get(rid)
                if run is not None and run.status is RunStatus.RUNNING:
                    self._runs[rid] = replace(run, heartbeat_at=_ms(now))

    def call_started(self, key: str, conversation_id: str, run_id: str | None, tool: str, unsafe: bool, now: datetime) -> None:
        with self._lock:
            old = self._journal.get(key)
            attempts = old[1].attempts + 1 if old else 1
            self._journal[key] = (conversation_id, JournalEntry(key, tool, unsafe, attempts))

    def entries(self, keys: Iterable[str]) -> dict[str, JournalEntry]:
        with self._lock:
            return {k: self._journal[k][1] for k in keys if k in self._journal}
