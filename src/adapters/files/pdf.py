"""TextExtractor on pypdf, in worker processes of its own, each file's cost bounded.

Why processes: a PDF is untrusted input to a pure-Python parser, and a few KB can keep
pypdf busy for an hour (forms that draw forms ten times over, on each of 500 pages) or make
it hold gigabytes (pages that inflate to 60 MB each).
A thread cannot be stopped: in the shared default executor seven such files once took every
thread, and the storage work queued behind them (issue 42). A process can be killed. So:
- at most `workers` PDFs are read at once, each by a worker process (`pdf_worker.py`); a
  caller that finds none free within `seconds` gets PdfBusy (503), nothing queues longer;
- a file that takes longer than `seconds` (on the clock) has its worker killed (SIGKILL) and
  reaped at once: 400 ATTACHMENT_UNREADABLE "took too long". The worker also carries its own
  limits (RLIMIT_CPU per file, RLIMIT_AS `memory`, a lower priority), so even a server
  killed mid-file leaves no process running past that budget;
- the workers are started on first use and kept (starting one costs ~0.15 s of CPU, most
  of it importing pypdf); a worker killed or out of memory is replaced in the background,
  one idle for IDLE_SECONDS is let go. They inherit no file descriptor but their pipes
  and no environment (no database URL, no token).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from adapters.files.pdf_worker import HEADER
from domain.errors import AttachmentUnreadable, PdfBusy
from ports.attachments import TextExtractor

log = logging.getLogger(__name__)

WORKER = Path(__file__).with_name("pdf_worker.py")
START_SECONDS = 30.0  # a worker not ready by then (a machine too busy) is given up
IDLE_SECONDS = 300.0  # a worker nobody used for this long exits: its memory goes back
NOT_STARTED = "PDFs cannot be read now: the PDF reader did not start (the server's log says why)"
JOBS = 200  # files one worker reads before another takes over (bounds what a leak can hold)


@dataclass(frozen=True)
class PdfLimits:
    """What one PDF may cost: `seconds` on the clock, `memory` bytes of address space (the
    worker's, pypdf's ~45 MB included), and how many are read at once (PDF_TIMEOUT,
    PDF_MEMORY, PDF_WORKERS); a caller waits for a free worker `wait` seconds at most
    (None: `seconds`, as long as the file it waits for may take)."""

    seconds: float
    memory: int
    workers: int
    wait: float | None = None


class _Worker:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.jobs = 0
        self.idle: asyncio.TimerHandle | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def read(self) -> bytes | None:
        """The next message, None at end of output (the worker died)."""
        assert self.proc.stdout is not None
        try:
            head = await self.proc.stdout.readexactly(HEADER.size)
            return await self.proc.stdout.readexactly(HEADER.unpack(head)[0])
        except asyncio.IncompleteReadError:
            return None

    async def ask(self, data: bytes, seconds: int) -> bytes | None:
        assert self.proc.stdin is not None
        self.jobs += 1
        self.proc.stdin.write(HEADER.pack(HEADER.size + len(data)) + HEADER.pack(seconds) + data)
        with contextlib.suppress(ConnectionError):  # it died: read() says so
            await self.proc.stdin.drain()
        return await self.read()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()

    async def reaped(self) -> int:
        """Its exit status, once the process is gone (never a zombie left behind)."""
        return await self.proc.wait()

    def let_go(self) -> None:
        """Its input closed: it exits on its own (reaped by asyncio's child watcher)."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()


class ProcessPdfExtractor(TextExtractor):
    """pdf_text in a pool of worker processes (see the module docstring); `aclose` ends them."""

    def __init__(self, limits: PdfLimits) -> None:
        self.limits = limits
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._starting: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots = asyncio.Semaphore(limits.workers)

    async def pdf_text(self, name: str, data: bytes) -> str:
        self._bind()
        try:
            async with asyncio.timeout(self.limits.seconds if self.limits.wait is None else self.limits.wait):
                await self._slots.acquire()
        except TimeoutError:
            raise PdfBusy() from None
        try:
            return await self._read(name, data)
        finally:
            self._slots.release()

    def workers(self) -> list[int]:
        """The pids of the worker processes alive now (idle or reading)."""
        return [w.pid for w in (*self._idle, *self._busy) if w.proc.returncode is None]

    async def aclose(self) -> None:
        for task in self._starting:
            task.cancel()
        await asyncio.gather(*self._starting, return_exceptions=True)
        workers = [*self._idle, *self._busy]
        self._idle.clear()
        for worker in workers:
            worker.kill()
        await asyncio.gather(*(w.reaped() for w in workers), return_exceptions=True)

    def _bind(self) -> None:
        # a pool belongs to one event loop (its pipes do): in another, it starts afresh
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            if self._loop is not None:
                for worker in (*self._idle, *self._busy):
                    worker.kill()
                self._idle, self._busy, self._starting = [], set(), set()
            self._loop, self._slots = loop, asyncio.Semaphore(self.limits.workers)

    async def _read(self, name: str, data: bytes) -> str:
        worker = await self._take()
        self._busy.add(worker)
        try:
            async with asyncio.timeout(self.limits.seconds):
                answer = await worker.ask(data, math.ceil(self.limits.seconds))
        except TimeoutError:
            log.warning("PDF %s: still reading after %g s: its worker (pid %d) is killed", name, self.limits.seconds, worker.pid)
            answer = None
        except BaseException:  # cancelled (the request went away): nobody waits for this file
            self._busy.discard(worker)
            worker.kill()
            self._replace()
            raise
        self._busy.discard(worker)
        reply = json.loads(answer) if answer is not None else None
        if reply is not None and reply.get("error") != "memory" and worker.jobs < JOBS:
            self._give_back(worker)
            return _text(name, reply)
        worker.kill()
        status = await worker.reaped()  # gone before the answer: its CPU and memory are free again
        self._replace()
        return _text(name, reply) if reply is not None else _died(name, status)

    async def _take(self) -> _Worker:
        while self._idle:
            worker = self._idle.pop()
            if worker.idle is not None:
                worker.idle.cancel()
            if worker.proc.returncode is None:
                return worker
        return await _start(self.limits.memory)

    def _give_back(self, worker: _Worker) -> None:
        assert self._loop is not None
        if len(self._idle) + len(self._busy) >= self.limits.workers:
            worker.let_go()  # one more than the pool holds (a replacement raced a caller's start)
            return
        worker.idle = self._loop.call_later(IDLE_SECONDS, self._expire, worker)
        self._idle.append(worker)

    def _expire(self, worker: _Worker) -> None:
        if worker in self._idle:
            self._idle.remove(worker)
            worker.let_go()

    def _replace(self) -> None:
        """Start a worker in the background for the next caller (one was killed)."""
        task = asyncio.get_running_loop().create_task(self._start_spare())
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)

    async def _start_spare(self) -> None:
        if len(self._idle) + len(self._busy) < self.limits.workers:
            with contextlib.suppress(PdfBusy):  # the next caller starts one, or says why it cannot
                self._give_back(await _start(self.limits.memory))


async def _start(memory: int) -> _Worker:
    """A worker process, ready (pypdf imported, its limits set)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            str(WORKER),
            str(memory),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
    except OSError as e:
        log.error("the PDF reader's worker cannot be started: %s", e)
        raise PdfBusy(NOT_STARTED) from None
    worker = _Worker(proc)
    try:
        async with asyncio.timeout(START_SECONDS):
            ready = await worker.read()
    except BaseException as e:
        worker.kill()
        if isinstance(e, TimeoutError):
            log.error("the PDF reader's worker was not ready within %g s", START_SECONDS)
            raise PdfBusy(NOT_STARTED) from None
        raise
    if ready != b"":
        worker.kill()
        log.error("the PDF reader's worker did not start (exit status %s)", await worker.reaped())
        raise PdfBusy(NOT_STARTED)
    return worker


def _died(name: str, status: int) -> NoReturn:
    """The worker gave no answer: killed at the limit (by us, or by its CPU limit), or it
    died of something else (out of memory where Python could not say so)."""
    if status in (-signal.SIGXCPU, -signal.SIGKILL):
        raise AttachmentUnreadable(f"{name}: the PDF took too long to read")
    log.warning("PDF %s: its worker ended without an answer (exit status %d)", name, status)
    raise AttachmentUnreadable(f"{name}: the PDF cannot be read (damaged or too complex)")


def _text(name: str, reply: dict[str, str]) -> str:
    """The text the worker read, or the error its answer names."""
    error = reply.get("error")
    if error is None:
        return reply["text"]
    if error == "encrypted":
        raise AttachmentUnreadable(f"{name}: the PDF is encrypted")
    if error == "empty":
        raise AttachmentUnreadable(f"{name}: the PDF has no text to read (a scan or images only)")
    if error == "memory":
        raise AttachmentUnreadable(f"{name}: the PDF needs more memory to read than a PDF may use")
    log.info("PDF %s could not be read: %s", name, reply.get("detail", error))
    raise AttachmentUnreadable(f"{name}: the PDF cannot be read (damaged or not a PDF)")
