"""A command on a real pseudo-terminal: it sees a TTY, and Ctrl-C typed on it is a real SIGINT
from the terminal driver."""

from __future__ import annotations

import codecs
import fcntl
import os
import pty
import select
import subprocess
import termios
import time
from pathlib import Path


class Terminal:
    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            args,
            env={**env, "TERM": "xterm", "COLUMNS": "120"},
            cwd=cwd,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,  # a session of its own, whose controlling terminal is the pty
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self.output = ""
        # readline may write a character's bytes one read apart (the REPL's "… " prompt): decoded
        # a read at a time, they came out as three replacement characters
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.mark = 0  # where the next read_until looks from

    def read_until(self, text: str, timeout: float = 60) -> str:
        """What appeared since the previous match, up to and including `text`."""
        deadline = time.monotonic() + timeout
        while (found := self.output.find(text, self.mark)) < 0:
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} did not appear; got {self.output[self.mark :]!r}")
            self._read(0.2)
        seen, self.mark = self.output[self.mark : found + len(text)], found + len(text)
        return seen

    def _read(self, wait: float) -> None:
        ready, _, _ = select.select([self.master], [], [], wait)
        if ready:
            try:
                self.output += self._decoder.decode(os.read(self.master, 65536))
            except OSError:  # the child closed the terminal
                time.sleep(wait)

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def interrupt_at_prompt(self, prompt: str, tries: int = 5) -> str:
        """Ctrl-C while readline waits, until `prompt` shows again. CPython's readline writes the
        prompt and only then blocks in select() with no timeout: a SIGINT landing between the two
        waits there for the next key (a person's second Ctrl-C), so a test types it again too."""
        for _ in range(tries - 1):
            self.type("\x03")
            try:
                return self.read_until(prompt, timeout=3)
            except AssertionError:
                continue
        self.type("\x03")
        return self.read_until(prompt)

    def wait(self, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._read(0.1)
        self._read(0.1)
        return self.proc.wait(max(deadline - time.monotonic(), 1))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)
