"""The SQLite backend: one file holds runs, checkpoints, the search index and the log."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from domain.errors import SophosError
from ports.backend import Backend, Health
from ports.checkpoints import CheckpointPort
from ports.metrics import NO_METRICS, MetricsPort

if TYPE_CHECKING:
    from adapters.sqlite.assistants import SqliteAssistantStore
    from adapters.sqlite.knowledge import SqliteKnowledge
    from adapters.sqlite.maintenance import SqliteMaintenance
    from adapters.sqlite.presets import SqlitePresetStore
    from adapters.sqlite.runs import SqliteRunStore
    from adapters.sqlite.saver import ThreadedSqliteSaver
    from adapters.sqlite.search import SqliteSearchIndex
    from adapters.sqlite.sessions import SqliteSessionStore
    from adapters.sqlite.store import SqliteStore
    from adapters.sqlite.traces import SqliteSpanStore
    from adapters.sqlite.usage import SqliteAuditLog, SqliteUsageStore
    from adapters.sqlite.users import SqliteUserStore

OPEN_FIX = "point DATABASE_PATH (or --db) at a writable place"
FULL_FIX = "free space on the disk that holds DATABASE_PATH"
MIN_FREE = 1024 * 1024  # bytes: a commit writes the WAL, then checkpoints it into the file


def disk_full(path: str) -> str | None:
    """Why the file cannot be written for want of space, or None. A full disk breaks
    every write (a run's outcome, a new message) while reads still work: a probe that
    only reads would answer "ok"."""
    try:
        stat = os.statvfs(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return None  # no such directory: opening the file says so
    free = stat.f_bavail * stat.f_frsize
    return None if free >= MIN_FREE else f"the disk that holds it is full ({free // 1024} KiB free)"


DAMAGE_FIX = "restore the file from a backup (`sophos db` cannot repair it)"


class SqliteBackend(Backend):
    """Each part opens the file on first use (the saver loads LangGraph: only a command
    that reads or runs threads builds it). Opening blocks briefly (migrations): the
    container builds the parts at start-up or from a command."""

    name = "sqlite"

    def __init__(self, path: str, busy_timeout: float = 5.0, keep: int = 3, metrics: MetricsPort = NO_METRICS) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self.keep = keep
        self.metrics = metrics
        self._runs: SqliteRunStore | None = None
        self._saver: ThreadedSqliteSaver | None = None
        self._search: SqliteSearchIndex | None = None
        self._maintenance: SqliteMaintenance | None = None

    def runs(self) -> SqliteRunStore:
        if self._runs is None:
            from adapters.sqlite.runs import SqliteRunStore

            self._runs = SqliteRunStore(self.path, busy_timeout=self.busy_timeout, metrics=self.metrics)
        return self._runs

    def saver(self) -> ThreadedSqliteSaver:
        if self._saver is None:
            from adapters.sqlite.saver import ThreadedSqliteSaver

            self._saver = ThreadedSqliteSaver.open(
                self.path, keep=self.keep, metrics=self.metrics, busy_timeout=self.busy_timeout
            )
        return self._saver

    def maintenance(self) -> SqliteMaintenance:
        if self._maintenance is None:
            from adapters.sqlite.maintenance import SqliteMaintenance

            self._maintenance = SqliteMaintenance(self.path)
        return self._maintenance

    def sessions(self) -> SqliteSessionStore:
        from adapters.sqlite.sessions import SqliteSessionStore

        return SqliteSessionStore(*self.runs().workers())  # the run store's writer and reader threads

    def users(self) -> SqliteUserStore:
        from adapters.sqlite.users import SqliteUserStore

        return SqliteUserStore(*self.runs().workers())

    def presets(self) -> SqlitePresetStore:
        from adapters.sqlite.presets import SqlitePresetStore

        return SqlitePresetStore(*self.runs().workers())

    def usage(self) -> SqliteUsageStore:
        from adapters.sqlite.usage import SqliteUsageStore

        return SqliteUsageStore(*self.runs().workers())

    def traces(self) -> SqliteSpanStore:
        from adapters.sqlite.traces import SqliteSpanStore

        return SqliteSpanStore(*self.runs().workers())

    def audit(self) -> SqliteAuditLog:
        from adapters.sqlite.usage import SqliteAuditLog

        return SqliteAuditLog(*self.runs().workers())

    def assistants(self) -> SqliteAssistantStore:
        from adapters.sqlite.assistants import SqliteAssistantStore

        return SqliteAssistantStore(*self.runs().workers())

    def store(self) -> SqliteStore:
        from adapters.sqlite.store import SqliteStore

        return SqliteStore(*self.runs().workers())

    def knowledge(self) -> SqliteKnowledge:
        from adapters.sqlite.knowledge import SqliteKnowledge

        return SqliteKnowledge(*self.runs().workers())

    def search(self, threads: Callable[[], CheckpointPort]) -> SqliteSearchIndex:
        if self._search is None:
            from adapters.sqlite.search import SqliteSearchIndex

            # the saver (LangGraph) indexes threads: opened only to rebuild or catch up
            self._search = SqliteSearchIndex(self.path, lambda: self.saver().reindex(), self.saver, self.metrics)
        return self._search

    async def health(self, integrity: bool = False) -> Health:
        try:
            store = self.runs()
            # a stat of the file, always; `PRAGMA quick_check` reads every page, so only on request
            damage = await asyncio.to_thread(store.integrity_problem) if integrity else store.storage_problem()
        except SophosError as e:
            return Health(self.path, reachable=False, writable=False, problem=e.message, fix=OPEN_FIX)
        full = disk_full(self.path)
        if damage is None and full is not None:
            return Health(
                self.path, reachable=True, writable=False, schema_version=store.schema_version, problem=full, fix=FULL_FIX
            )
        return Health(
            self.path,
            reachable=True,
            writable=damage is None,
            schema_version=store.schema_version,
            integrity=damage,
            fix=DAMAGE_FIX if damage else "",
        )

    async def aclose(self) -> None:
        # newest first: the search index and the saver read what the run store migrated
        search, saver, runs = self._search, self._saver, self._runs
        self._search = self._saver = self._runs = None
        if search is not None:
            search.close()
        if saver is not None:
            saver.close()
        if runs is not None:
            await runs.aclose()
