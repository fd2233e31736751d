"""One writer thread per database file in a process, shared by every connection that writes
it (the run store's writer and the checkpoint saver).

Why: SQLite lets one connection write at a time. Two writer connections on two threads of
one process raced for the file's lock: the loser slept in SQLite's busy handler (1, 2, 5,
10 ms...) while the winner committed, so at 64 conversations every turn waited on its own
process. On one thread the writes simply queue, each thread hop wakes one thread fewer,
and the connections stay separate (each keeps its own transactions and pragmas).
Other processes still queue behind `busy_timeout`, as before.

The thread is a `SerialThread`, not a ThreadPoolExecutor: a call from the event loop hands
its result back with one `call_soon_threadsafe`, without a concurrent future chained to an
asyncio one (their locks, callbacks and state copies). On this project's 2-core VM a
round trip to an idle thread cost 100 µs of CPU through `run_in_executor` and 58 µs this
way; with 50 calls queued at once, 18 µs against 5 µs a call. A turn makes about a dozen."""

from __future__ import annotations

import asyncio
import atexit
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

_lock = threading.Lock()
_threads: dict[str, tuple[SerialThread, int]] = {}

CLOSED = "cannot schedule new calls after shutdown"


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():  # the caller went away while the call ran: nobody reads it
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


class SerialThread:
    """One thread that runs calls in submission order, as ThreadPoolExecutor(1) does.

    `run` awaits a call from the event loop: a call whose caller is cancelled before the
    call starts never runs, one already started completes (as a write sent to a network
    database would). `submit` is for threads (opening, closing). `shutdown` lets the calls
    already sent finish; it also runs at interpreter exit, so queued writes are not lost."""

    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...], Any] | None] = queue.SimpleQueue()
        self._guard = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()
        atexit.register(self.shutdown)

    def _put(self, fn: Callable[..., Any], args: tuple[Any, ...], target: Any) -> None:
        with self._guard:
            if self._closed:
                raise RuntimeError(CLOSED)
            self._queue.put((fn, args, target))

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        self._put(partial(fn, **kwargs) if kwargs else fn, args, future)
        return future

    def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> asyncio.Future[T]:
        """The call's result, to await on the running loop (RuntimeError at once when the
        thread is shut down)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._put(partial(fn, **kwargs) if kwargs else fn, args, (loop, future))
        return future

    def shutdown(self, wait: bool = True) -> None:
        with self._guard:
            if not self._closed:
                self._closed = True
                self._queue.put(None)
                atexit.unregister(self.shutdown)
        if wait and threading.current_thread() is not self._thread:
            self._thread.join()

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            fn, args, target = item
            if isinstance(target, Future):
                if target.set_running_or_notify_cancel():
                    try:
                        target.set_result(fn(*args))
                    except BaseException as e:
                        target.set_exception(e)
                continue
            loop, future = target
            if future.cancelled():
                continue
            result, error = None, None
            try:
                result = fn(*args)
            except BaseException as e:
                error = e
            try:
                loop.call_soon_threadsafe(_settle, future, result, error)
            except RuntimeError:  # the loop is closed: nobody waits for the result
                pass


def _key(path: str) -> str | None:
    """The file a path names, or None for a database that no other connection can share."""
    if path == ":memory:" or path.startswith("file:"):
        return None
    return os.path.realpath(path)


def writer_thread(path: str, name: str = "writer") -> SerialThread:
    """The file's writer thread (one worker, calls in submission order); give it back with
    `release` once the connection that used it is closed."""
    key = _key(path)
    if key is None:
        return SerialThread(f"sophos-sqlite-{name}")
    with _lock:
        pool, users = _threads.get(key, (None, 0))
        if pool is None:
            pool = SerialThread("sophos-sqlite-writer")
        _threads[key] = (pool, users + 1)
        return pool


def release(path: str, pool: SerialThread, wait: bool = True) -> None:
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
