"""StoragePort in memory: counts from the stores themselves; nothing to compact."""

from __future__ import annotations

from adapters.memory.runs import InMemoryRunStore
from adapters.memory.saver import InMemoryThreadSaver
from ports.storage import StoragePort, StorageStats


class InMemoryMaintenance(StoragePort):
    def __init__(self, runs: InMemoryRunStore, saver: InMemoryThreadSaver) -> None:
        self.runs = runs
        self.saver = saver

    def stats(self, top: int = 5) -> StorageStats:
        conversations, runs = self.runs.counts()
        checkpoints = sum(len(by_id) for by_ns in self.saver.storage.values() for by_id in by_ns.values())
        return StorageStats("memory", 0, conversations, runs, checkpoints, len(self.saver.writes), 0, 0)

    def prune(self, keep: int) -> int:
        return 0  # nothing outlives the process: the saver keeps every checkpoint

    def vacuum(self) -> tuple[int, int]:
        return 0, 0
