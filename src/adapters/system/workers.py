"""Worker threads of their own, bounded (ports.workers).

Not asyncio's default executor: storage uses that one (LangGraph's PostgreSQL saver writes
every checkpoint through it), and neither a hostile input nor a request's large work may fill
it. (Untrusted documents are read in processes of their own: adapters/files/pdf.py.) Pure-Python work here still takes the GIL by turns with the
event loop (every `sys.getswitchinterval()`), so the loop is slowed, never stopped."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from ports.workers import Worker

T = TypeVar("T")


class WorkerThreads(Worker):
    def __init__(self, name: str, size: int = 1) -> None:
        self._pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix=name)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, partial(fn, *args))

    async def aclose(self) -> None:
        """Calls not started are dropped; one running ends on its own (a thread cannot be stopped)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
