"""StoragePort: size, retention and compaction of the durable store."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class ThreadUsage:
    thread_id: str
    checkpoints: int
    bytes: int


@dataclass(frozen=True)
class StorageStats:
    path: str
    file_bytes: int
    conversations: int
    runs: int
    checkpoints: int
    writes: int
    logged_checkpoints: int
    free_bytes: int
    largest: list[ThreadUsage] = field(default_factory=list)


class StoragePort(Protocol):
    @abstractmethod
    def stats(self, top: int = 5) -> StorageStats:
        """Sizes and counts, with the `top` largest threads by checkpoint bytes."""

    @abstractmethod
    def prune(self, keep: int) -> int:
        """Keep the latest `keep` (>= 1) checkpoints of every thread, with their pending
        writes; delete the rest. The latest checkpoint, which a resume needs, is always
        kept, and the checkpoint log (the JSONL export) is untouched. Returns the number
        of checkpoints deleted."""

    @abstractmethod
    def vacuum(self) -> tuple[int, int]:
        """Give free pages back to the file system; returns (bytes before, bytes after)."""
