"""Threads for the bulk work a request asks for (the zip of every conversation, the files
of an import), apart from asyncio's default executor.

Why: the default executor is storage's (LangGraph's PostgreSQL saver serialises every
checkpoint there with `asyncio.to_thread`, ours decodes pending writes and search snippets
there, SQLite opens and checks its file there) and the libraries' (host name lookups,
LangChain's synchronous callbacks): many short calls that a turn waits for. Work whose size
a request decides must never queue ahead of them: in issue 42 seven hostile PDFs held every
thread of it, and on PostgreSQL every new chat waited behind them. So untrusted documents
are read in processes of their own, killed at their limit (adapters/files/pdf.py), and bulk
work runs here, BULK_THREADS at a time: one request more waits for its turn here, never in
storage's way. Nothing long or untrusted goes to the default executor.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

BULK_THREADS = 2

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None


def bulk_executor() -> ThreadPoolExecutor:
    """The process's bulk threads, started on first use (joined at exit, as every
    ThreadPoolExecutor is)."""
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(BULK_THREADS, thread_name_prefix="sophos-bulk")
        return _executor


async def in_bulk_thread(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`asyncio.to_thread` on the bulk threads: `fn` runs there with the caller's context
    (its log fields), and the caller awaits it."""
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(bulk_executor(), call)
