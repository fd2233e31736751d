"""ProcessPort from /proc (Linux) with a portable fallback."""

from __future__ import annotations

import os
import socket
import uuid
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


def _pid_namespace() -> int:
    """The inode of this process's pid namespace: two containers sharing a host name see
    different pids, so a pid is only checked against an owner in the same namespace."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


class LocalProcesses(ProcessPort):
    def __init__(self) -> None:
        pid = os.getpid()
        instance = uuid.uuid4().hex  # the fencing identity: unique per process start
        self._me = RunOwner(socket.gethostname(), pid, _start_ticks(pid) or 0.0, instance, _pid_namespace())

    def current(self) -> RunOwner:
        return self._me

    def is_alive(self, owner: RunOwner) -> bool | None:
        if owner.host != self._me.host or (owner.namespace and owner.namespace != self._me.namespace):
            return None
        if not _pid_exists(owner.pid):
            return False
        fields = _stat(owner.pid)
        if fields is None:
            return True  # no /proc here: the pid exists, trust it
        if fields[0] in ("Z", "X"):  # a killed process its parent has not reaped yet
            return False
        return not owner.started or float(fields[19]) == owner.started
