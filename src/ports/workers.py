"""Worker: CPU-bound work of a use case run off the event loop, so that a large input (an
import's parsing) never stalls the streams and runs of everyone else."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Worker(Protocol):
    @abstractmethod
    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` on a thread of the worker's own (never the executor storage uses),
        its result or its exception. Calls beyond the worker's size wait their turn, so the
        CPU they take is bounded whatever the number of callers."""
