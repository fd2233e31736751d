"""Storage's own threads, for the blocking and CPU work around its queries, apart from
asyncio's default executor.

Why: the default executor (`asyncio.to_thread`, `run_in_executor(None, ...)`) is shared by
everything in the process: libraries (LangChain runs synchronous callbacks there, asyncio
resolves host names there) and any code that wants a thread for a while. Storage must never
queue behind them: in issue 42 seven hostile PDFs read there held every one of its threads,
and on PostgreSQL each new chat then waited for its pending writes to be decoded. Untrusted
files are no longer read in any thread (adapters/files/pdf.py runs them in processes that
are killed at their limit), and storage keeps threads of its own besides, so that a full
default executor, whatever fills it, cannot stall a read or a write. SQLite's reads and
writes have their own threads already (adapters/sqlite/threads.py); what runs here is the
rest: decoding pending writes, search snippets, an integrity check, opening and closing.
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

THREADS = 4  # a few at once: each call is short (ms), they only must not wait behind others

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None


def storage_executor() -> ThreadPoolExecutor:
    """The process's storage threads, started on first use (and joined at exit, as every
    ThreadPoolExecutor is)."""
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(THREADS, thread_name_prefix="sophos-storage")
        return _executor


async def in_storage_thread(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`asyncio.to_thread` on storage's threads: `fn` runs there with the caller's context
    (its log fields), and the caller awaits it."""
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(storage_executor(), call)
