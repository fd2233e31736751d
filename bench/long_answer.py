"""A model in a repetition loop against a real `sophos serve` (issue 34 item 5): a fake Ollama
(a process of its own) streams a --tokens answer while a client reads the run's SSE stream;
the server's peak RSS growth over the run (its VmHWM, sampled, against its RSS before the
message) and the run_events rows left in the SQLite file.

Cases: MODEL_MAX_TOKENS at its default, and at its maximum (131,072: with `--tokens 131072`
the answer is streamed whole, which shows what the replay buffer bound and the packed event
rows do on their own against the same answer on an older tree).
`--src` runs another checkout's `src` (e.g. `git archive <commit> src | tar -x -C /tmp/old`)
to measure before and after; a tree without the setting streams the whole answer anyway.

Usage: python -m bench.long_answer [--tokens 300000] [--max-tokens N ...] [--src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from tests.support.app import app_env
from tests.support.server import free_port

from entrypoints.settings import MAX_ANSWER_TOKENS

ROOT = Path(__file__).resolve().parents[1]
SERVE = "import sys; from entrypoints.cli import main; sys.argv = ['sophos', 'serve']; main()"


def status_kib(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1]) for line in f if line.startswith(field + ":")), 0)
    except OSError:
        return 0


def wait_up(url: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: the process exited")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def run_case(src: str, tokens: int, max_tokens: int | None, limit: float) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model_port, port = free_port(), free_port()
        fake = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.fake_ollama",
                "--port",
                str(model_port),
                "--nodelay",
                "--loop",
                "loop ",
                "--count",
                str(tokens),
            ],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}"},
            stdout=subprocess.DEVNULL,
        )
        env = app_env(
            work, f"http://127.0.0.1:{model_port}", TOOLS_BACKEND="none", PORT=port, HOST="127.0.0.1", MODEL_TIMEOUT=600
        )
        if max_tokens is not None:
            env["MODEL_MAX_TOKENS"] = str(max_tokens)
        log = (work / "server.log").open("wb")
        server = subprocess.Popen(
            [sys.executable, "-c", SERVE], cwd=work, env={**os.environ, **env, "PYTHONPATH": src}, stdout=log, stderr=log
        )
        try:
            wait_up(f"http://127.0.0.1:{model_port}/api/tags", fake)
            wait_up(f"http://127.0.0.1:{port}/api/healthz", server)
            before = status_kib(server.pid, "VmRSS")
            peak, streamed, last, sampled = before, 0, "", time.monotonic()
            started = time.monotonic()
            with httpx.stream(
                "POST",
                f"http://127.0.0.1:{port}/api/chat",
                json={"message": "go"},
                headers={"Accept": "text/event-stream"},
                timeout=limit,
            ) as response:
                event = ""
                for line in response.iter_lines():
                    if time.monotonic() - sampled > 0.2:
                        peak, sampled = max(peak, status_kib(server.pid, "VmHWM")), time.monotonic()
                    if line.startswith("event:"):
                        event = line[6:].strip()
                    elif line.startswith("data:") and event == "token":
                        streamed += 1
                    elif line.startswith("data:") and event in ("end", "chat-error"):
                        data = json.loads(line[5:])
                        last = data.get("code") or data.get("status") or event
                        break
                    if time.monotonic() - started > limit:
                        last = f"still streaming after {limit:.0f} s"
                        break
            seconds = time.monotonic() - started
            time.sleep(0.5)  # the outcome's write
            peak = max(peak, status_kib(server.pid, "VmHWM"))
            with sqlite3.connect(work / "db" / "sophos.db") as db:
                rows = db.execute("SELECT count(*) FROM run_events").fetchone()[0]
        finally:
            server.terminate()
            fake.terminate()
            server.wait(60)
            fake.wait(10)
            log.close()
        label = "unset" if max_tokens is None else f"{max_tokens:,}"
        return f"{label}\t{streamed:,}\t{last}\t{(peak - before) / 1024:.0f}\t{rows:,}\t{seconds:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--src", default=str(ROOT / "src"))
    parser.add_argument("--tokens", type=int, default=300_000)
    parser.add_argument(
        "--max-tokens",
        type=int,
        action="append",
        help="MODEL_MAX_TOKENS values to measure (default: the default, and the maximum)",
    )
    parser.add_argument("--limit", type=float, default=900, help="seconds a case may stream")
    args = parser.parse_args()
    cases: list[int | None] = list(args.max_tokens or [None, MAX_ANSWER_TOKENS])
    print(f"src={args.src} answer of {args.tokens:,} tokens")
    print("MODEL_MAX_TOKENS\ttokens streamed\toutcome\tpeak RSS growth (MiB)\trun_events rows\tseconds")
    for max_tokens in cases:
        print(run_case(args.src, args.tokens, max_tokens, args.limit), flush=True)


if __name__ == "__main__":
    main()
