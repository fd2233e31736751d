"""How a run looks on the terminal: tokens on stdout, tool calls and the outcome on stderr,
a spinner while waiting (on a terminal only), and a quiet exit when the reader goes away."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from datetime import UTC, datetime
from typing import Any

import click

from entrypoints.cli.exits import EXIT_OK, EXIT_STOPPED, EXIT_WAITING, exit_code_of
from entrypoints.cli.hints import for_cli
from entrypoints.notices import ContextNotices


class Spinner:
    """Elapsed time on stderr while the model has not answered or a tool runs.

    Drawn by a thread so it also turns while a blocking HTTP read waits; only on a terminal
    (stderr) and never with `--json`, so pipes and files get none of it."""

    FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._label: str | None = None
        self._since = 0.0
        self._shown = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def wait(self, label: str) -> None:
        """Show `label` with the time since now, until `clear`."""
        if not self.enabled:
            return
        with self._lock:
            self._label, self._since = label, time.monotonic()
        if self._thread is None:
            self._thread = threading.Thread(target=self._turn, name="spinner", daemon=True)
            self._thread.start()

    def clear(self) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._label = None
            self._erase()

    def close(self) -> None:
        self.clear()
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1)
            self._thread = None

    def _erase(self) -> None:
        if self._shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self._shown = False

    def _turn(self) -> None:
        frame = 0
        while not self._stop.wait(0.1):
            with self._lock:
                if self._label is None:
                    continue
                elapsed = time.monotonic() - self._since
                if elapsed < 0.3:  # a quick answer needs no spinner
                    continue
                sys.stderr.write(f"\r\033[K{self.FRAMES[frame % len(self.FRAMES)]} {self._label} {elapsed:.0f}s")
                sys.stderr.flush()
                self._shown = True
                frame += 1


class Printer:
    """Prints a run's events; remembers its outcome; goes quiet when stdout is closed."""

    def __init__(self, as_json: bool, reasoning: bool = True) -> None:
        self.as_json = as_json
        self.reasoning = reasoning  # print the model's thinking (dimmed, on stderr)
        self.thinking = False  # thinking is being printed: the answer starts on a new line
        self.status = "completed"
        self.error: dict[str, Any] | None = None
        self.approvals: list[dict[str, Any]] = []  # calls the run stopped before, waiting
        self.conversation: str | None = None  # set by the client as soon as the run is started
        self.pipe_closed = False
        self.spinner = Spinner(enabled=not as_json and sys.stderr.isatty())
        self.notices = ContextNotices()

    def start(self) -> None:
        self.spinner.wait("waiting for the model")

    def event(self, event: str, data: Any) -> None:
        self._outcome(event, data)
        if self.pipe_closed:
            return
        try:
            self._print(event, data)
        except BrokenPipeError:
            self.pipe_closed = True
            self.spinner.enabled = False
            silence_output()

    def _outcome(self, event: str, data: Any) -> None:
        if event == "queued":
            self.status, self.error = "queued", None
        elif event == "approval":
            self.approvals = list(data.get("calls") or [])
        elif event == "end":
            self.status, self.error = data["status"], None
        elif event == "chat-error":
            self.status = "lost" if data.get("code") == "RUN_LOST" else "failed"
            self.error = data

    def _print(self, event: str, data: Any) -> None:
        if event == "reasoning" and not self.reasoning:
            return
        if self.as_json:
            click.echo(json.dumps({"event": event, "data": data}, ensure_ascii=False))
            return
        if event == "reasoning":
            # on stderr, so that stdout is the answer alone; dimmed where stderr is a terminal
            self.spinner.clear()
            self.thinking = True
            click.secho(data, dim=True, err=True, nl=False)
        elif event == "token":
            self.spinner.clear()
            if self.thinking:
                self.thinking = False
                click.echo("", err=True)
            click.echo(data, nl=False)
        elif event == "queued":
            self.spinner.clear()
            how = (
                "steers the active run (a text answer stops at once)"
                if data.get("steer")
                else "starts when the active run completes"
            )
            click.secho(f"queued ({data['id']}, position {data['position']}): {how}", fg="yellow", err=True)
        elif event == "started":  # the next queued message's run
            self.spinner.clear()
            click.secho(f"\n» next queued message (run {data['run']})", fg="yellow", err=True)
            self.spinner.wait("waiting for the model")
        elif event == "trace" and data["event"] == "call":
            self.spinner.clear()
            args = json.dumps(data["data"]["arguments"], ensure_ascii=False)
            click.secho(f"\n→ {data['name']} {args}", fg="cyan", err=True)
            self.spinner.wait(f"running {data['name']}")
        elif event == "trace" and data["event"] == "result":
            self.spinner.clear()
            text = data["data"]["result"].replace("\n", " ")
            click.secho(f"← {data['name']}: {text[:200]}", fg="cyan", err=True)
            self.spinner.wait("waiting for the model")
        elif event == "approval":
            self.spinner.clear()
            for call in data.get("calls") or []:
                click.secho(approval_line(call), fg="yellow", err=True)
        elif event == "trace" and data["event"] in ("context", "summary", "truncated"):
            notice = self.notices.line(data["event"], data["data"])
            if notice:
                self.spinner.clear()
                click.secho(notice, fg="yellow", err=True)

    def report(self, cid: str, run_id: str, resume_hint: str) -> int:
        """The outcome on stderr and the exit code it means."""
        self.spinner.close()
        if self.as_json or self.pipe_closed:
            return self.exit_code()
        click.echo("")
        if self.error:
            click.echo(f"error: {self.error['code']}: {for_cli(self.error['message'])}", err=True)
        if self.status in ("interrupted", "cancelled"):
            click.echo(f"{self.status}; its progress is saved. Resume with: {resume_hint}", err=True)
        if self.status == "cancelling":
            click.echo("cancel requested: the server stops the run at its next step; its progress is saved", err=True)
        if self.status == "waiting":
            approve = resume_hint.replace("sophos resume", "sophos approve", 1)
            count = len(self.approvals) or "some"
            click.echo(
                f"waiting for approval of {count} tool call(s). Decide with: {approve} "
                "[--call ID] [--edit-args JSON | --reject REASON | --always]",
                err=True,
            )
        click.echo(f"conversation: {cid}  run: {run_id}  status: {self.status}", err=True)
        return self.exit_code()

    def exit_code(self) -> int:
        if self.status in ("completed", "queued"):
            return EXIT_OK
        if self.status == "waiting":
            return EXIT_WAITING
        if self.status in ("interrupted", "cancelled", "cancelling"):
            return EXIT_STOPPED
        return exit_code_of(self.error.get("code") if self.error else None)


def approval_line(call: dict[str, Any]) -> str:
    """One pending call, as `chat` and `approve` print it."""
    args = json.dumps(call.get("args"), ensure_ascii=False)
    return f"? {call.get('name')} {args} waits for approval (call {call.get('id')})"


def silence_output() -> None:
    """The reader closed the pipe: send what is left (and Python's final flush) nowhere, so
    the process ends quietly instead of with a BrokenPipeError. stderr too: it is often the
    same pipe (`2>&1 | head`), and a quiet exit has nothing more to say."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for stream in (sys.stdout, sys.stderr):
            os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


def ago(when: datetime, now: datetime | None = None) -> str:
    """`just now`, `5 min ago`, `3 h ago`, `2 days ago`, then the date."""
    seconds = ((now or datetime.now(UTC)) - when).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min ago"
    if seconds < 86400:
        return f"{seconds // 3600:.0f} h ago"
    if seconds < 7 * 86400:
        days = seconds // 86400
        return "yesterday" if days == 1 else f"{days:.0f} days ago"
    return when.astimezone().strftime("%Y-%m-%d")
