"""RunSignals and ToolJournal in memory: the run store's cancel requests and tool journal,
behind its lock (adapters/memory/runs.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime

from domain.errors import RunLost
from domain.model import Run, RunStatus
from ports.journal import JournalEntry, ToolJournal
from ports.signals import RunSignals


class InMemorySignals(RunSignals, ToolJournal):
    _lock: threading.Lock
    _runs: dict[str, Run]
    _cancels: set[str]
    _journal: dict[str, tuple[str, JournalEntry]]  # key -> (conversation, entry)

    # --- RunSignals ----------------------------------------------------------------------

    async def request_cancel(self, run_id: str) -> bool:
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.status is not RunStatus.RUNNING:
                return False
            self._cancels.add(run_id)
            return True

    async def cancel_requested(self, run_ids: Sequence[str]) -> set[str]:
        with self._lock:
            return {
                rid
                for rid in run_ids
                if rid in self._cancels and (run := self._runs.get(rid)) is not None and run.status is RunStatus.RUNNING
            }

    # --- ToolJournal ---------------------------------------------------------------------

    async def call_started(
        self, key: str, conversation_id: str, run_id: str | None, tool: str, unsafe: bool, now: datetime
    ) -> None:
        with self._lock:
            if run_id is not None:
                run = self._runs.get(run_id)
                if run is None or run.status is not RunStatus.RUNNING:
                    raise RunLost()
            old = self._journal.get(key)
            if old is None:
                self._journal[key] = (conversation_id, JournalEntry(key, tool, unsafe, 1))
            else:  # as SQLite's ON CONFLICT: the first tool and flag stay, attempts count
                self._journal[key] = (old[0], replace(old[1], attempts=old[1].attempts + 1))

    async def entries(self, keys: Iterable[str]) -> dict[str, JournalEntry]:
        with self._lock:
            return {k: self._journal[k][1] for k in keys if k in self._journal}
