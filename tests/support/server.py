"""A real `sophos serve` in a subprocess, and a small SSE reader for tests."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import EventSource

from entrypoints.settings import Settings
from tests.support import zygote
from tests.support.app import SOPHOS, process_env

LGAPI_DEFAULT = Settings().LANGGRAPH_API_PORT


@contextlib.contextmanager
def default_lgapi_port_taken() -> Iterator[None]:
    """127.0.0.1:2024 held by this test while it runs, or by whatever holds it already
    (`langgraph dev`, another server): either way, busy. One such test at a time on this
    machine (a file lock): another's holder closing early would free the port under it."""
    with (Path(tempfile.gettempdir()) / f"sophos-tests-port-{LGAPI_DEFAULT}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", LGAPI_DEFAULT))
                s.listen()
            except OSError as e:
                assert e.errno == errno.EADDRINUSE, e
            yield


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """`sophos serve` in a process of its own, forked from the test process's zygote
    (tests/support/zygote.py) unless `fork` is False."""

    def __init__(self, env: dict[str, str], cwd: Path, port: int | None = None, fork: bool = True) -> None:
        self.port = port or free_port()
        self.env = process_env({**env, "PORT": str(self.port), "HOST": "127.0.0.1"})
        self.cwd = cwd
        self.fork = fork and zygote.ENABLED
        self.proc: subprocess.Popen[bytes] | zygote.Forked | None = None
        self.log = cwd / f"server-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> LiveServer:
        if self.fork:
            self.proc = zygote.spawn([SOPHOS, "serve"], self.env, self.cwd, self.log)
        else:
            with self.log.open("ab") as out:
                self.proc = subprocess.Popen([SOPHOS, "serve"], env=self.env, cwd=self.cwd, stdout=out, stderr=out)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()}")
            try:
                if httpx.get(f"{self.url}/api/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.05)
        raise RuntimeError("server did not start")

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.wait(10)

    def wait(self, timeout: float) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def post(self, path: str, body: Any, **kw: Any) -> httpx.Response:
        return httpx.post(f"{self.url}{path}", json=body, timeout=30, **kw)

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return httpx.get(f"{self.url}{path}", timeout=30, **kw)

    def patch(self, path: str, body: Any, **kw: Any) -> httpx.Response:
        return httpx.patch(f"{self.url}{path}", json=body, timeout=30, **kw)


def sse_events(response: httpx.Response) -> Iterator[tuple[str | None, str, Any]]:
    """A streaming response's events as they arrive, as (id, event, data): the id only on an
    event that carried one (the SSE grammar carries the last id over; the server never
    repeats one, so an unchanged id is one the event lacked)."""
    previous = ""
    for sse in EventSource(response).iter_sse():
        own, previous = (sse.id if sse.id != previous else None), sse.id
        yield own, sse.event, json.loads(sse.data)


def event_number(event_id: str | None) -> int:
    """The per-run number of an SSE id (`<n>@<run tag>`)."""
    assert event_id is not None and "@" in event_id, event_id
    return int(event_id.split("@")[0])


def stream(
    server: LiveServer, cid: str, last_id: int | str | None = None, timeout: float = 30
) -> list[tuple[str | None, str, Any]]:
    headers = {"Last-Event-ID": str(last_id)} if last_id is not None else {}
    with httpx.stream("GET", f"{server.url}/api/chat", params={"conversation": cid}, headers=headers, timeout=timeout) as r:
        return list(sse_events(r))
