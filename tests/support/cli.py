"""A `sophos` command as a person runs it from a script: its output captured, its exit code
returned. Forked from the test process's zygote (tests/support/zygote.py) unless
SOPHOS_TEST_FORK=0: the command itself is the real CLI, with the environment, working
directory and standard streams (files or pipes, never a terminal) that `subprocess.run`
gives it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support import zygote
from tests.support.app import SOPHOS, process_env


def sophos(
    env: dict[str, str], cwd: Path | None, *args: str, input: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    full = process_env(env)
    if zygote.ENABLED:
        return zygote.run([SOPHOS, *args], full, cwd, input, timeout)
    return subprocess.run(
        [SOPHOS, *args],
        env=full,
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=None if input is not None else subprocess.DEVNULL,
    )
