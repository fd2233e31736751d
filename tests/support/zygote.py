"""`sophos serve` and CLI commands for the tests, forked from an interpreter that has already
imported the heavy libraries (LangGraph, LangChain, the MCP client), instead of a new
interpreter each time.

Why: the suite starts about 250 servers, and an interpreter that imports those libraries
spends ~1.1 s of CPU before it serves (its start is 1.5 s of CPU in all). On 2 cores the
suite is bound by CPU, so that import time was a fifth of `make test` (docs/testing.md).

What a test gets is still a real `sophos` process: its own pid and memory, started by
`entrypoints.cli.main()` with the environment, working directory, argv and file
descriptors that `subprocess.Popen` would give it, killed by real signals, exiting through
its own atexit handlers. Only our own code (src/) is imported after the fork, so no
setting or module state of Sophos is inherited. The libraries' import-time state is, which
is why a test that checks what the process loads starts it the usual way
(`LiveServer(..., fork=False)`), as does every test when SOPHOS_TEST_FORK=0.

One zygote per test process (an xdist worker), started on first use: it reads a request
per line on stdin, forks, and answers the child's pid; it reaps its children and answers
their exit status (`Forked.poll`), since only a parent can wait for a process.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types
from pathlib import Path
from typing import IO, Any

ENABLED = os.environ.get("SOPHOS_TEST_FORK", "1") != "0"

# imported once by the zygote: what a server imports that costs most (src/ is not imported)
PRELOAD = (
    "langgraph.graph",
    "langgraph.checkpoint.sqlite",
    "langchain_core.language_models.chat_models",
    "langchain_core.messages",
    "langchain_ollama",
    "mcp.client.session",
    "mcp.client.stdio",
    "mcp.types",
    "httpx",
    "pydantic",
    "starlette.applications",
    "yaml",
    "jsonschema",
)


class Forked:
    """The part of `subprocess.Popen` the tests use, for a process the zygote forked."""

    def __init__(self, zygote: Zygote, pid: int, argv: list[str]) -> None:
        self.zygote = zygote
        self.pid = pid
        self.args = argv
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.zygote.status(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            time.sleep(0.01)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Zygote:
    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.zygote"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.lock = threading.Lock()
        self.ask({"op": "ping"})  # the libraries are imported

    def ask(self, request: dict[str, Any]) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self.lock:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the test zygote is gone (exit {self.proc.poll()})")
        return json.loads(line)["answer"]

    def spawn(self, argv: list[str], env: dict[str, str], cwd: Path, stdio: tuple[Path, Path, Path]) -> Forked:
        streams = [str(p) for p in stdio]
        pid = int(self.ask({"op": "spawn", "argv": argv, "env": env, "cwd": str(cwd), "stdio": streams}))
        return Forked(self, pid, argv)

    def status(self, pid: int) -> int | None:
        code = self.ask({"op": "status", "pid": pid})
        return None if code is None else int(code)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


_zygote: Zygote | None = None
_made = threading.Lock()


def spawn(argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> Forked:
    """`argv` (a `sophos` command) run as a fork of this test process's zygote, its output
    appended to `log`, its standard input empty."""
    return _the_zygote(env).spawn(argv, env, cwd, (Path(os.devnull), log, log))


def run(
    argv: list[str], env: dict[str, str], cwd: Path | None, input: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`subprocess.run(argv, capture_output=True, text=True, input=input)` for a forked
    `sophos` command: its standard streams are files (as pipes are, not a terminal)."""
    with tempfile.TemporaryDirectory(prefix="sophos-run-") as tmp:
        stdin, out, err = Path(os.devnull), Path(tmp) / "out", Path(tmp) / "err"
        if input is not None:
            stdin = Path(tmp) / "in"
            stdin.write_text(input)
        child = _the_zygote(env).spawn(argv, env, cwd or Path.cwd(), (stdin, out, err))
        try:
            code = child.wait(timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            raise subprocess.TimeoutExpired(argv, timeout, out.read_text(), err.read_text()) from None
        return subprocess.CompletedProcess(argv, code, out.read_text(), err.read_text())


def _the_zygote(env: dict[str, str]) -> Zygote:
    global _zygote
    with _made:
        if _zygote is None or _zygote.proc.poll() is not None:
            _zygote = Zygote({**os.environ, "PYTHONPATH": env["PYTHONPATH"]})
            atexit.register(_zygote.close)
        return _zygote


# --- the zygote -------------------------------------------------------------------------


def _child(request: dict[str, Any], protocol: tuple[IO[str], IO[str]]) -> None:
    """In the forked child: become the process Popen would have started, then run it."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    stdin, stdout, stderr = request["stdio"]
    fds = [os.open(stdin, os.O_RDONLY), os.open(stdout, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)]
    fds.append(fds[1] if stderr == stdout else os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644))
    for stream in protocol:
        stream.close()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    os.closerange(3, 1 << 16)  # Popen's close_fds
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = list(request["argv"])
    # `__main__` as a console script has it (click names the program from it), not this module
    script = types.ModuleType("__main__")
    script.__file__ = sys.argv[0]
    sys.modules["__main__"] = script
    # the standard streams as a new interpreter opens them on files or pipes: stdout
    # block-buffered and stderr by line, or both written through under PYTHONUNBUFFERED
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own standard streams
    if os.environ.get("PYTHONUNBUFFERED"):
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(
            io.FileIO(2, "w", closefd=False), errors="backslashreplace", write_through=True, line_buffering=True
        )
    else:
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")  # noqa: SIM115
    from entrypoints.cli import main

    sys.exit(main())  # atexit handlers and interpreter shutdown as in any process


def main() -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    statuses: dict[int, int] = {}

    def reap() -> None:  # what ended: a killed server must not stay a zombie
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            statuses[pid] = os.waitstatus_to_exitcode(status)

    stdin, stdout = sys.stdin, sys.stdout
    while True:
        reap()
        ready, _, _ = select.select([stdin], [], [], 0.02)
        if not ready:
            continue
        line = stdin.readline()
        if not line:
            return
        request = json.loads(line)
        reap()
        answer: Any = None
        if request["op"] == "spawn":
            stdout.flush()
            pid = os.fork()
            if pid == 0:
                _child(request, (stdin, stdout))
                return  # not reached: the child exits in _child
            answer = pid
        elif request["op"] == "status":
            answer = statuses.get(int(request["pid"]))
        stdout.write(json.dumps({"answer": answer}) + "\n")
        stdout.flush()


if __name__ == "__main__":
    main()
