"""ToolJournal: an "about to call" record written before every tool call.

After a crash, a pending tool call (no saved result) that the journal shows as started may
have taken effect: its outcome is unknown. Recovery uses this, with the tool's annotations,
to decide whether the call may simply run again.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class JournalEntry:
    key: str  # "<conversation_id>:<tool_call_id>", the idempotency key
    tool: str
    unsafe: bool  # destructive and not idempotent (MCP annotations)
    attempts: int


class ToolJournal(Protocol):
    @abstractmethod
    def call_started(self, key: str, conversation_id: str, run_id: str | None, tool: str, unsafe: bool, now: datetime) -> None:
        """Record (durably, before the call is sent) that the call starts; counts attempts."""

    @abstractmethod
    def entries(self, keys: Iterable[str]) -> dict[str, JournalEntry]:
        """The entries among `keys` that were ever started."""
