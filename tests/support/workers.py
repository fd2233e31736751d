"""Work for the worker process tests (tests/integration/test_worker_processes.py): functions
a spawned worker can import by name."""

from __future__ import annotations

import os


def pid() -> int:
    return os.getpid()


def allocate(megabytes: int) -> int:
    """Holds `megabytes` at once: past the worker's address-space limit, a MemoryError."""
    block = bytearray(megabytes * 1024 * 1024)
    return len(block)


def fail(message: str) -> None:
    raise ValueError(message)


def nap(seconds: float) -> float:
    import time

    time.sleep(seconds)
    return seconds
