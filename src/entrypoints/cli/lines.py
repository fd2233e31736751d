"""The REPL's input: line editing and a history file through readline (where Python has
it), and `\"\"\"` for a message of several lines."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from types import ModuleType

PROMPT = "> "
MORE = "… "  # the prompt inside a \"\"\" block
QUOTES = '"""'
HISTORY_LINES = 1000  # kept in the history file; older lines are dropped when it is saved


def _readline() -> ModuleType | None:
    try:
        import readline
    except ImportError:  # Windows, or a Python built without it: input() still works
        return None
    return readline


class LineReader:
    """Reads what the person typed: one line, or a block between \"\"\" lines. Ctrl-D raises
    EOFError, Ctrl-C KeyboardInterrupt (the line being typed is dropped)."""

    def __init__(self, history: Path | None) -> None:
        self.history = history
        self.readline = _readline()
        if self.readline is None:
            return
        self.readline.set_history_length(HISTORY_LINES)
        if history is not None and history.exists():
            with contextlib.suppress(OSError):
                self.readline.read_history_file(history)

    def read(self) -> str:
        line = input(PROMPT)
        self._remember(line)
        if not line.lstrip().startswith(QUOTES):
            return line
        first = line.lstrip()[len(QUOTES) :]
        if first.rstrip().endswith(QUOTES):  # """one line"""
            return first.rstrip()[: -len(QUOTES)]
        lines = [first] if first.strip() else []
        while True:
            more = input(MORE)
            self._remember(more)
            if more.rstrip().endswith(QUOTES):
                last = more.rstrip()[: -len(QUOTES)]
                if last.strip():
                    lines.append(last)
                return "\n".join(lines)
            lines.append(more)

    def _remember(self, line: str) -> None:
        """Each line goes to the file at once (a crash keeps it); `close` bounds the file.
        readline itself added it to the session's history, if it was not blank."""
        if self.readline is None or self.history is None or not line.strip():
            return
        with contextlib.suppress(OSError):
            if not self.history.exists():  # readline appends only to a file that exists
                self.history.parent.mkdir(parents=True, exist_ok=True)
                # what a person typed is theirs to read
                os.close(os.open(self.history, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            self.readline.append_history_file(1, self.history)

    def close(self) -> None:
        if self.readline is None or self.history is None or not self.history.exists():
            return
        with contextlib.suppress(OSError):
            self.readline.write_history_file(self.history)  # at most HISTORY_LINES
