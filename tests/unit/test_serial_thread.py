"""The file's writer thread: calls in submission order, results back on the loop, a call
cancelled before it starts never runs, one already started completes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from adapters.sqlite.threads import SerialThread


@pytest.fixture
def thread() -> Iterator[SerialThread]:
    t = SerialThread("test-serial")
    yield t
    t.shutdown()


async def test_calls_run_in_order_on_one_thread_off_the_loop(thread: SerialThread) -> None:
    seen: list[tuple[int, str]] = []

    def call(n: int) -> int:
        seen.append((n, threading.current_thread().name))
        return n * 2

    results = await asyncio.gather(*(thread.run(call, n) for n in range(50)))
    assert results == [n * 2 for n in range(50)]
    assert [n for n, _ in seen] == list(range(50))
    assert {name for _, name in seen} == {"test-serial"}


async def test_an_error_reaches_the_caller_and_the_thread_goes_on(thread: SerialThread) -> None:
    def fail() -> None:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        await thread.run(fail)
    assert await thread.run(lambda: "still here") == "still here"


async def test_a_call_cancelled_before_it_starts_never_runs(thread: SerialThread) -> None:
    gate, ran = threading.Event(), list[str]()
    blocker = thread.run(gate.wait, 5)
    queued = asyncio.ensure_future(thread.run(ran.append, "queued"))
    await asyncio.sleep(0.01)
    queued.cancel()
    gate.set()
    await blocker
    assert await thread.run(lambda: "after") == "after"
    assert ran == []


async def test_a_call_already_running_completes_when_its_caller_is_cancelled(thread: SerialThread) -> None:
    started, gate, done = threading.Event(), threading.Event(), []

    def write() -> None:
        started.set()
        gate.wait(5)
        done.append("written")

    caller = asyncio.ensure_future(thread.run(write))
    await asyncio.get_running_loop().run_in_executor(None, started.wait, 5)
    caller.cancel()
    gate.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    await thread.run(lambda: None)
    assert done == ["written"]


async def test_shutdown_finishes_the_queued_calls_then_refuses_new_ones() -> None:
    t = SerialThread("test-serial-shutdown")
    done: list[int] = []
    futures = [t.submit(done.append, n) for n in range(20)]
    t.shutdown(wait=True)
    assert done == list(range(20)) and all(f.done() for f in futures)
    with pytest.raises(RuntimeError):
        t.submit(done.append, 99)
    with pytest.raises(RuntimeError):
        t.run(done.append, 99)


def test_submit_returns_a_future_for_threads(thread: SerialThread) -> None:
    assert thread.submit(pow, 2, exp=3).result(5) == 8
    with pytest.raises(ZeroDivisionError):
        thread.submit(divmod, 1, 0).result(5)
