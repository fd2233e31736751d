"""ToolJournal: an "about to call" record written before every tool call.

After a crash, a pending tool call (no saved result) that the journal shows as started may
have taken effect: its outcome is unknown. The lifecycle rules (domain.lifecycle) use this,
with the tool's annotations, to decide whether the call may simply run again.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class JournalEntry:
    key: str  # domain.lifecycle.idempotency_key(conversation, tool call)
    tool: str
    unsafe: bool  # destructive and not idempotent (MCP annotations)
    attempts: int


class ToolJournal(Protocol):
    @abstractmethod
    async def call_started(
        self, key: str, conversation_id: str, run_id: str | None, tool: str, unsafe: bool, now: datetime
    ) -> None:
        """Record (durably, before the call is sent) that the call starts; counts attempts.

        Fenced: with a `run_id` that is no longer running, nothing is written and RunLost
        is raised, so a process that lost its run never sends the call."""

    @abstractmethod
    async def entries(self, keys: Iterable[str]) -> dict[str, JournalEntry]:
        """The entries among `keys` that were ever started."""
