"""One writer thread per database file in a process, shared by every connection that writes
it (the run store's writer and the checkpoint saver).

Why: SQLite lets one connection write at a time. Two writer connections on two threads of
one process raced for the file's lock: the loser slept in SQLite's busy handler (1, 2, 5,
10 ms...) while the winner committed, so at 64 conversations every turn waited on its own
process. On one thread the writes simply queue, each thread hop wakes one thread fewer,
and the connections stay separate (each keeps its own transactions and pragmas).
Other processes still queue behind `busy_timeout`, as before."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_lock = threading.Lock()
_threads: dict[str, tuple[ThreadPoolExecutor, int]] = {}


def _key(path: str) -> str | None:
    """The file a path names, or None for a database that no other connection can share."""
    if path == ":memory:" or path.startswith("file:"):
        return None
    return os.path.realpath(path)


def writer_thread(path: str, name: str = "writer") -> ThreadPoolExecutor:
    """The file's writer thread (one worker, calls in submission order); give it back with
    `release` once the connection that used it is closed."""
    key = _key(path)
    if key is None:
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"sophos-sqlite-{name}")
    with _lock:
        pool, users = _threads.get(key, (None, 0))
        if pool is None:
            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sophos-sqlite-writer")
        _threads[key] = (pool, users + 1)
        return pool


def release(path: str, pool: ThreadPoolExecutor, wait: bool = True) -> None:
    """One user fewer; the last one shuts the thread down (after the calls already sent)."""
    key = _key(path)
    with _lock:
        held = _threads.get(key) if key is not None else None
        if held is not None and held[0] is pool:
            if held[1] > 1:
                _threads[key] = (pool, held[1] - 1)  # type: ignore[index]
                return
            del _threads[key]  # type: ignore[arg-type]
    pool.shutdown(wait=wait)


def users(path: str) -> int:
    """How many connections share the file's writer thread now (0: none)."""
    key = _key(path)
    with _lock:
        return _threads[key][1] if key is not None and key in _threads else 0
