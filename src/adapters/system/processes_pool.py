"""A worker process of its own, bounded (ports.workers): work on untrusted input (an import's
file, read and built into messages) runs outside the server's process.

In a thread it took the server's GIL by turns with the event loop, and it filled the server's
heap with the parsed file: each full pass of Python's garbage collector then walked that heap
with every thread stopped (gaps of 250-650 ms beside a 20,000-message import, measured with
`gc.callbacks`). Here the file's objects live and die in the worker; only the result comes
back, pickled. The worker has a memory limit (RLIMIT_AS) and a lower priority; a call past the
limit, or a worker that died, raises the caller's error (`failed`) and the next call gets a
new worker. One call at a time per worker: callers beyond the size wait their turn."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import resource
import signal
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from typing import Any, TypeVar

from domain.errors import SophosError
from ports.workers import Worker

T = TypeVar("T")
NICE = 5  # below the server's own work (the chats beside an import), above the PDF readers'


def _limit(memory: int) -> None:
    os.nice(NICE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


class WorkerProcesses(Worker):
    def __init__(self, size: int, memory: int, failed: Callable[[], SophosError]) -> None:
        self.size = size
        self.memory = memory
        self.failed = failed
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # spawn: a fork of a server with threads may copy a held lock; the worker starts
            # once, on first use, and serves every call after
            context = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(self.size, mp_context=context, initializer=_limit, initargs=(self.memory,))
        return self._pool

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        pool = self._executor()  # calls beyond its size wait in its queue
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, partial(fn, *args))
        except MemoryError:
            raise self.failed() from None
        except BrokenProcessPool:  # killed (by the kernel, or an operator): a new one next time
            if self._pool is pool:
                self._pool = None
                pool.shutdown(wait=False, cancel_futures=True)
            raise self.failed() from None

    def pids(self) -> list[int]:
        """The worker processes alive now."""
        processes = getattr(self._pool, "_processes", None) or {}  # the executor names no public way
        return [p.pid for p in processes.values() if p.is_alive()]

    async def aclose(self) -> None:
        """Ends the workers at once: a call still running is lost with them (a server stopping)."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
