"""ProcessPort from /proc (Linux) with a portable fallback."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from domain.model import RunOwner
from ports.processes import ProcessPort


def _stat(pid: int) -> list[str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after the last ')'
    return stat[stat.rindex(")") + 2 :].split()


def _start_ticks(pid: int) -> float | None:
    """The process start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    fields = _stat(pid)
    return float(fields[19]) if fields else None


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class LocalProcesses(ProcessPort):
    def __init__(self) -> None:
        pid = os.getpid()
        self._me = RunOwner(socket.gethostname(), pid, _start_ticks(pid) or 0.0)

    def current(self) -> RunOwner:
        return self._me

    def is_alive(self, owner: RunOwner) -> bool | None:
        if owner.host != self._me.host:
            return None
        if not _pid_exists(owner.pid):
            return False
        fields = _stat(owner.pid)
        if fields is None:
            return True  # no /proc here: the pid exists, trust it
        if fields[0] in ("Z", "X"):  # a killed process its parent has not reaped yet
            return False
        return not owner.started or float(fields[19]) == owner.started
