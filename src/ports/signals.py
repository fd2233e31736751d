"""RunSignals: requests sent to a run wherever it executes."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Protocol


class RunSignals(Protocol):
    """A cancel asked for in one process and observed by the run's owner in another."""

    @abstractmethod
    async def request_cancel(self, run_id: str) -> bool:
        """Record that the run must stop; True if it is running (the request is stored),
        False if it is unknown or finished. Idempotent."""

    @abstractmethod
    async def cancel_requested(self, run_ids: Sequence[str]) -> set[str]:
        """Of these runs, those with a pending cancel request."""
