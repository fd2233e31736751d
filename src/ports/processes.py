"""ProcessPort: who owns a run, and whether that owner still lives."""

from __future__ import annotations

from abc import abstractmethod
from typing import Protocol

from domain.model import RunOwner


class ProcessPort(Protocol):
    @abstractmethod
    def current(self) -> RunOwner:
        """This process: host name, pid and start time."""

    @abstractmethod
    def is_alive(self, owner: RunOwner) -> bool | None:
        """True if that very process still runs, False if it is gone (or its pid now
        belongs to a process started later), None if it cannot tell (another host)."""
