"""The import worker's process (adapters/system/processes_pool.py): work runs outside the
server's process, within a memory limit; a worker past the limit or killed is the caller's
clear error, and the next call gets a new worker."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator

import pytest

from adapters.system.processes_pool import WorkerProcesses
from domain.errors import InvalidImport
from tests.support import workers

MEMORY = 512 * 1024 * 1024


@pytest.fixture
async def pool() -> AsyncIterator[WorkerProcesses]:
    worker = WorkerProcesses(1, MEMORY, lambda: InvalidImport("too much for the worker"))
    try:
        yield worker
    finally:
        await worker.aclose()


async def test_work_runs_in_a_process_of_its_own_and_its_errors_come_back(pool: WorkerProcesses) -> None:
    child = await pool.run(workers.pid)
    assert child != os.getpid() and pool.pids() == [child]
    assert await pool.run(workers.pid) == child  # one worker serves every call
    with pytest.raises(ValueError, match="malformed"):
        await pool.run(workers.fail, "malformed")


async def test_past_the_memory_limit_is_the_callers_error_not_the_servers_memory(pool: WorkerProcesses) -> None:
    assert await pool.run(workers.allocate, 64) == 64 * 1024 * 1024
    with pytest.raises(InvalidImport, match="too much"):
        await pool.run(workers.allocate, 2 * MEMORY // (1024 * 1024))
    assert await pool.run(workers.allocate, 64) == 64 * 1024 * 1024


async def test_a_killed_worker_fails_its_call_and_the_next_call_gets_a_new_one(pool: WorkerProcesses) -> None:
    first = await pool.run(workers.pid)
    napping = asyncio.create_task(pool.run(workers.nap, 30))
    os.kill(first, signal.SIGKILL)
    with pytest.raises(InvalidImport):
        await asyncio.wait_for(napping, 20)
    second = await pool.run(workers.pid)
    assert second != first


async def test_closing_ends_a_worker_still_at_work(pool: WorkerProcesses) -> None:
    child = await pool.run(workers.pid)
    napping = asyncio.create_task(pool.run(workers.nap, 60))
    await asyncio.sleep(0)  # the call is sent
    await pool.aclose()
    with pytest.raises((InvalidImport, asyncio.CancelledError)):
        await asyncio.wait_for(napping, 20)
    with pytest.raises(ProcessLookupError):
        for _ in range(200):  # reaped by the executor's thread once killed
            os.kill(child, 0)
            await asyncio.sleep(0.05)
