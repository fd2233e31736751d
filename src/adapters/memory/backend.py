"""The memory backend: every part in this process's memory, gone when it exits. For tests
and trying Sophos out; the same contracts as the durable backends."""

from __future__ import annotations

from collections.abc import Callable

from adapters.memory.assistants import InMemoryAssistantStore
from adapters.memory.knowledge import InMemoryKnowledge
from adapters.memory.maintenance import InMemoryMaintenance
from adapters.memory.presets import InMemoryPresetStore
from adapters.memory.runs import InMemoryRunStore
from adapters.memory.saver import InMemoryThreadSaver
from adapters.memory.search import InMemorySearchIndex
from adapters.memory.sessions import InMemorySessionStore
from adapters.memory.store import InMemoryStore
from adapters.memory.traces import InMemorySpanStore
from adapters.memory.usage import InMemoryAuditLog, InMemoryUsageStore
from adapters.memory.users import InMemoryUserStore
from ports.backend import Backend, Health
from ports.checkpoints import CheckpointPort

WHERE = "memory"


class MemoryBackend(Backend):
    name = "memory"

    def __init__(self, runs: InMemoryRunStore | None = None, saver: InMemoryThreadSaver | None = None) -> None:
        self._runs = runs or InMemoryRunStore()
        self._saver = saver or InMemoryThreadSaver()
        self._search: InMemorySearchIndex | None = None
        self._sessions = InMemorySessionStore()
        self._users = InMemoryUserStore()
        self._presets = InMemoryPresetStore()
        self._audit = InMemoryAuditLog()
        self._store = InMemoryStore()
        self._assistants = InMemoryAssistantStore()
        self._knowledge = InMemoryKnowledge()
        self._traces = InMemorySpanStore(self._runs)
        self._usage = InMemoryUsageStore(self._traces)

    def runs(self) -> InMemoryRunStore:
        return self._runs

    def saver(self) -> InMemoryThreadSaver:
        return self._saver

    def maintenance(self) -> InMemoryMaintenance:
        return InMemoryMaintenance(self._runs, self._saver)

    def search(self, threads: Callable[[], CheckpointPort]) -> InMemorySearchIndex:
        if self._search is None:
            self._search = InMemorySearchIndex(self._runs, threads(), self._saver)
        return self._search

    def sessions(self) -> InMemorySessionStore:
        return self._sessions

    def users(self) -> InMemoryUserStore:
        return self._users

    def presets(self) -> InMemoryPresetStore:
        return self._presets

    def usage(self) -> InMemoryUsageStore:
        return self._usage

    def audit(self) -> InMemoryAuditLog:
        return self._audit

    def store(self) -> InMemoryStore:
        return self._store

    def assistants(self) -> InMemoryAssistantStore:
        return self._assistants

    def knowledge(self) -> InMemoryKnowledge:
        return self._knowledge

    def traces(self) -> InMemorySpanStore:
        return self._traces

    async def health(self, integrity: bool = False) -> Health:
        return Health(WHERE, reachable=True, writable=True)

    async def aclose(self) -> None:
        await self._runs.aclose()
