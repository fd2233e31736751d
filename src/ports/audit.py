"""AuditLog: the append-only record of who did what (issue 47 item 4)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from domain.audit import AuditEntry


class AuditLog(Protocol):
    """Rows are only appended; no method changes one. `prune` alone removes rows, the
    oldest, for the retention."""

    @abstractmethod
    async def append(self, entry: AuditEntry) -> None:
        """Store `entry` (its `seq` is ignored: the store numbers rows in the order they are
        appended, increasing for every process sharing it)."""

    @abstractmethod
    async def entries(self, since: datetime | None, limit: int) -> Sequence[AuditEntry]:
        """The rows at or after `since` (None: from the first), oldest first, at most
        `limit` of them (the oldest `limit`), each with its `seq`. Only reads."""

    @abstractmethod
    async def prune(self, before: datetime) -> int:
        """Remove the rows older than `before`; how many were removed."""
