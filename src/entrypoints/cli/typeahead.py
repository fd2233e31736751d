"""Lines typed in the REPL while an answer is written: each one goes into the conversation's
durable queue at once (`multitask: "enqueue"`), so it is answered after the run, in the order
typed, even if this terminal closes meanwhile.

Between turns readline owns the terminal; during a turn the terminal is back in its canonical
mode, so the driver echoes what is typed and hands over whole lines, which are read here from
the event loop. Only a terminal is read this way: from a pipe, the next lines are the next
prompts' input and stay where they are."""

from __future__ import annotations

import asyncio
import codecs
import os
import sys

import click

from domain.errors import SophosError
from domain.lifecycle import StopReason
from entrypoints.cli.base import fail
from entrypoints.cli.client import RemoteError, SophosClient, Stopper
from entrypoints.cli.output import Printer


class TypeAhead:
    """Reads stdin during one turn and queues each line on the turn's conversation. A queued
    line's answer is followed by the turn itself (it follows the conversation's queue); a line
    that reached the server just after the run ended starts a run of its own, followed here."""

    def __init__(self, client: SophosClient, printer: Printer, reasoning: bool) -> None:
        self.client = client
        self.printer = printer  # the turn's: it learns the conversation once the run starts
        self.reasoning = reasoning
        self.stoppers: list[Stopper] = []  # the runs these lines started, for Ctrl-C
        self._tasks: list[asyncio.Task[None]] = []
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial = ""
        self._fd: int | None = None
        self._turn_over = asyncio.Event()

    def open(self) -> None:
        if not sys.stdin.isatty():
            return
        self._fd = sys.stdin.fileno()
        asyncio.get_running_loop().add_reader(self._fd, self._readable)

    def _readable(self) -> None:
        assert self._fd is not None
        try:
            data = os.read(self._fd, 65536)
        except OSError:
            data = b""
        if not data:  # Ctrl-D on an empty line, or the terminal went away: stop reading
            self._stop_reading()
            return
        text = self._partial + self._decoder.decode(data)
        *lines, self._partial = text.split("\n")
        for line in lines:
            if line.strip():
                self._tasks.append(asyncio.ensure_future(self._queue(line)))

    async def _queue(self, line: str) -> None:
        if line.lstrip().startswith("/"):
            click.secho(f"(not sent: commands wait for the prompt: {line.strip()})", fg="yellow", err=True)
            return
        while self.printer.conversation is None and not self._turn_over.is_set():
            await asyncio.sleep(0.05)  # the run is being started: its conversation is not known yet
        cid = self.printer.conversation
        if cid is None:
            click.secho(f"(not sent: the turn ended before it started: {line.strip()})", fg="yellow", err=True)
            return
        printer, stopper = Printer(as_json=False, reasoning=self.reasoning), Stopper()
        printer.spinner.enabled = False  # the turn's own spinner is the one on the screen
        self.stoppers.append(stopper)
        try:
            await self.client.run({"message": line, "conversation": cid, "multitask": "enqueue"}, printer, stopper)
        except (SophosError, RemoteError) as e:
            fail(e).show()
        finally:
            self.stoppers.remove(stopper)

    def stop(self, reason: StopReason) -> None:
        for stopper in list(self.stoppers):
            stopper(reason)

    async def close(self) -> None:
        """After the turn: stop reading and let the lines already read reach the server."""
        self._stop_reading()
        self._turn_over.set()
        if self._tasks:
            await asyncio.gather(*self._tasks)

    def _stop_reading(self) -> None:
        if self._fd is not None:
            asyncio.get_running_loop().remove_reader(self._fd)
            self._fd = None
