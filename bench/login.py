"""What the page's login costs each request: requests/s of GET /api/conversations through a
real `sophos serve` with API_TOKEN set, and the server's CPU per request (steadier than the
rate on a shared machine), authenticated by the session cookie and, for comparison, by the
bearer token; this tree against another source tree (a baseline).

Usage: python -m bench.login [--baseline PATH] [--seconds 5] [--clients 4] [--database-url URL]
(PATH: a source tree, e.g. `git archive <ref> | tar -x -C PATH`)."""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import httpx

from bench.serving import ROOT, CpuMeter, Server, Tree

TOKEN = "bench-login-token"


async def rate(
    url: str, headers: dict[str, str], cookies: dict[str, str], seconds: float, clients: int, pid: int
) -> tuple[float, float]:
    """Requests/s over `seconds`, `clients` keep-alive connections each sending one at a time,
    and the server's CPU microseconds per request."""
    done = 0

    async def client(deadline: float) -> None:
        nonlocal done
        async with httpx.AsyncClient(headers=headers, cookies=cookies, timeout=10) as c:
            while time.perf_counter() < deadline:
                r = await c.get(f"{url}/api/conversations")
                if r.status_code != 200:
                    raise RuntimeError(f"GET /api/conversations answered {r.status_code}: {r.text[:200]}")
                done += 1

    await asyncio.gather(*(client(time.perf_counter() + 1) for _ in range(clients)))  # warm up
    done = 0
    meter = CpuMeter(pid, ())
    meter.start()
    start = time.perf_counter()
    await asyncio.gather(*(client(start + seconds) for _ in range(clients)))
    wall, cpu, _, _ = meter.stop()
    return done / wall, cpu / done * 1e6


async def measure(tree: Tree, seconds: float, clients: int, database_url: str) -> tuple[tuple[float, float], tuple[float, float]]:
    with tempfile.TemporaryDirectory(prefix="sophos-bench-login-") as tmp:
        server = Server(tree, Path(tmp), "http://127.0.0.1:9")
        server.env.update({"API_TOKEN": TOKEN, "DATABASE_URL": database_url})
        pid = await server.start()
        try:
            async with httpx.AsyncClient() as c:
                login = await c.post(f"{server.url}/api/session", json={"token": TOKEN})
                login.raise_for_status()
                cookies = dict(login.cookies)
            cookie = await rate(server.url, {}, cookies, seconds, clients, pid)
            bearer = await rate(server.url, {"Authorization": f"Bearer {TOKEN}"}, {}, seconds, clients, pid)
            return cookie, bearer
        finally:
            server.stop()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()
    trees = [Tree("this tree", ROOT)] + ([Tree(f"baseline {args.baseline}", args.baseline)] if args.baseline else [])
    print("| tree | cookie req/s | cookie CPU µs/req | bearer req/s | bearer CPU µs/req |\n|---|---|---|---|---|")
    for tree in trees:
        (cookie, cookie_cpu), (bearer, bearer_cpu) = await measure(tree, args.seconds, args.clients, args.database_url)
        print(f"| {tree.label} | {cookie:.0f} | {cookie_cpu:.0f} | {bearer:.0f} | {bearer_cpu:.0f} |", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
