"""Wake-ups for followers in this process, so they need not wait for the next poll."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


class Wakeups:
    """Futures by run id, resolved when this process writes that run's events.

    Followers of a run owned elsewhere still poll; these only spare a local follower the
    poll interval (the owner's own stream, the common case). Thread-safe: a future is
    resolved on its own loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._futures: dict[str, set[asyncio.Future[None]]] = {}

    def listen(self, run_id: str) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._lock:
            self._futures.setdefault(run_id, set()).add(future)
        return future

    def forget(self, run_id: str, future: asyncio.Future[None]) -> None:
        with self._lock:
            futures = self._futures.get(run_id)
            if futures is not None:
                futures.discard(future)
                if not futures:
                    del self._futures[run_id]

    async def wait(self, run_id: str, read: Callable[[], Awaitable[T]], timeout: float, poll_interval: float) -> T:
        """`read()` until it gives something (or `timeout` passes): woken at once by a
        write of this process, else every `poll_interval` (writes of other processes)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            woken = self.listen(run_id)  # before reading, so no write slips between
            try:
                found = await read()
                left = deadline - loop.time()
                if found or left <= 0:
                    return found
                await asyncio.wait({woken}, timeout=min(poll_interval, left))
            finally:
                self.forget(run_id, woken)

    def wake(self, run_ids: Iterable[str]) -> None:
        with self._lock:
            woken = [f for rid in run_ids for f in self._futures.pop(rid, ())]
        for future in woken:
            future.get_loop().call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
