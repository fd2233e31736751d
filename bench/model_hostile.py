"""Memory a hostile model server can make Sophos's model client hold (issue 34 item 4): each
case in a fresh subprocess (an OllamaModel call, or its readiness probe, against a server in
this process that generates its bytes as it sends them). The figure is the subprocess's peak
RSS growth over the call (its VmHWM, sampled, so a call that never ends still shows what it
held; killed after --limit seconds), with the call's outcome.

Usage: python -m bench.model_hostile [--src DIR] [--mode auto|fast|httpx] [--case NAME ...]
`--src` runs another checkout's `src` (e.g. `git archive <commit> src | tar -x -C /tmp/old`)
to measure before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gzip
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

MiB = 1 << 20
DONE = b'{"model":"qwen3","message":{"role":"assistant","content":"ok"},"done":true}\n'

Writer = Callable[[asyncio.StreamWriter], Awaitable[None]]


async def huge_head(w: asyncio.StreamWriter) -> None:
    w.write(b"HTTP/1.1 200 OK\r\nX-Pad: ")
    block = b"a" * MiB
    for _ in range(3 * 1024):  # 3 GiB of one header
        w.write(block)
        await w.drain()
    w.write(b"\r\nContent-Length: %d\r\n\r\n%s" % (len(DONE), DONE))


@functools.cache
def bomb(tags: bool) -> bytes:
    """~0.5 MiB of gzip inflating to 512 MiB: newlines, or a model list padded with spaces."""
    if tags:
        return gzip.compress(b'{"models":[{"name":"qwen3:latest"}]' + b" " * (512 * MiB) + b"}", 9)
    return gzip.compress(b"\n" * (512 * MiB), 9)


async def gzip_bomb(w: asyncio.StreamWriter) -> None:
    body = bomb(False)
    w.write(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))


async def tags_bomb(w: asyncio.StreamWriter) -> None:
    body = bomb(True)
    w.write(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))


async def long_line(w: asyncio.StreamWriter) -> None:
    size = 256 * MiB
    head, tail = b'{"model":"qwen3","message":{"role":"assistant","content":"', b'"},"done":true}\n'
    w.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(head) + size + len(tail), head))
    block = b"a" * MiB
    for _ in range(size // MiB):
        w.write(block)
        await w.drain()
    w.write(tail)


CASES: dict[str, tuple[str, Writer]] = {
    "3 GiB header": ("stream", huge_head),
    "gzip bomb (0.5 MiB -> 512 MiB), chat": ("stream", gzip_bomb),
    "gzip bomb, readiness probe": ("check", tags_bomb),
    "256 MiB NDJSON line": ("stream", long_line),
}

CHILD = """
import asyncio, sys, time
from adapters.ollama.model import OllamaModel
from domain.model import UserMessage
url, what, mode = sys.argv[1:4]
def hwm():  # not ru_maxrss: Linux carries the parent's over fork and exec
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
async def main():
    kw = {"transport": mode} if "transport" in OllamaModel.__init__.__code__.co_varnames else {}
    model = OllamaModel(url, "qwen3", timeout=60, **kw)
    print(hwm(), flush=True)
    t = time.monotonic()
    try:
        if what == "check":
            r = await model.check()
            outcome = "ready" if r.ok else "not ready: " + r.reason
        else:
            _ = [o async for o in model.stream("sys", [UserMessage("hi")], [])]
            outcome = "answered"
    except BaseException as e:
        outcome = type(e).__name__ + ": " + str(e)[:110]
    peak = hwm()
    print(f"{peak}\\t{time.monotonic() - t:.1f}\\t{outcome}", flush=True)
asyncio.run(main())
"""


async def run_case(src: str, mode: str, what: str, writer: Writer, limit: float) -> str:
    async def handle(reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            await writer(w)
            await w.drain()
            await reader.read()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            w.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}"
    async with srv:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CHILD, url, what, mode, env={**os.environ, "PYTHONPATH": src}, stdout=subprocess.PIPE
        )
        assert proc.stdout is not None
        baseline = int(await proc.stdout.readline())
        peak, started = baseline, time.monotonic()
        rest = asyncio.ensure_future(proc.communicate())  # read as it comes: the child never blocks on its pipe
        while not rest.done() and time.monotonic() - started < limit:
            peak = max(peak, _hwm(proc.pid))
            await asyncio.wait({rest}, timeout=0.2)
        if not rest.done():
            proc.kill()
            await rest
            return f"{(peak - baseline) / 1024:.0f}\t{limit:.0f}\tstill reading after {limit:.0f} s (killed)"
        final, _, outcome = rest.result()[0].decode().strip().partition("\t")
        return f"{(max(peak, int(final)) - baseline) / 1024:.0f}\t{outcome}"


def _hwm(pid: int) -> int:
    """VmHWM of a process, in KiB (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("VmHWM:")), 0)
    except OSError:
        return 0


async def main(args: argparse.Namespace) -> None:
    print(f"src={args.src} mode={args.mode}")
    print("case\tpeak RSS growth (MiB)\tseconds\toutcome")
    bomb(True), bomb(False)  # built before any clock runs
    for name, (what, writer) in CASES.items():
        if not args.case or name in args.case:
            print(f"{name}\t{await run_case(args.src, args.mode, what, writer, args.limit)}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--src", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))
    parser.add_argument("--mode", default="auto")
    parser.add_argument("--case", action="append")
    parser.add_argument("--limit", type=float, default=120, help="seconds a case may take before it is killed")
    asyncio.run(main(parser.parse_args()))
