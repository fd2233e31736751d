"""The model call's client CPU by HTTP transport: ChatOllama streaming from the fake Ollama
(its own process, TCP_NODELAY, answering at once), once through httpx's own transport
(httpcore and h11; the pool keeping every connection alive) and once through Sophos's
(`adapters/langchain/transport.py`: httpx's interface on httptools, under the bounds of
`adapters/langchain/bounds.py`), alternating, at 1 and at
32 calls in flight, on uvloop as `sophos serve` runs. The figure is this process's CPU per call.

Usage: python -m bench.model_transport [--calls 600] [--transport-reps 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import httpx
from langchain_core.messages import HumanMessage
from langchain_ollama import ChatOllama

from adapters.langchain.client import model_transport
from adapters.langchain.transport import KEEP_IDLE
from bench.serving import fake_ollama_process
from bench.table import Row, print_table

TRANSPORTS = ("httpx", "httptools")


def spread(xs: list[float]) -> str:
    return f"[{min(xs):.2f}-{max(xs):.2f}]"


def client(url: str, transport: str) -> tuple[ChatOllama, httpx.AsyncBaseTransport | None]:
    if transport == "httptools":
        t = model_transport(url, "fast")  # with the bounds (adapters.langchain.bounds)
        return ChatOllama(model="qwen3:latest", base_url=url, async_client_kwargs={"transport": t}), t
    limits = httpx.Limits(max_connections=KEEP_IDLE, max_keepalive_connections=KEEP_IDLE)
    return ChatOllama(model="qwen3:latest", base_url=url, client_kwargs={"limits": limits}), None


async def cpu_per_call(url: str, transport: str, calls: int, in_flight: int) -> float:
    """This process's CPU per streamed call, in ms (after a warm-up wave)."""
    chat, owned = client(url, transport)
    prompt = [HumanMessage("hello there")]
    gate = asyncio.Semaphore(in_flight)

    async def call() -> None:
        async with gate:
            chunks: list[Any] = [c async for c in chat.astream(prompt)]
            if not chunks:
                raise RuntimeError("the fake model streamed nothing")

    try:
        await asyncio.gather(*(call() for _ in range(in_flight)))
        start = time.process_time()
        await asyncio.gather(*(call() for _ in range(calls)))
        return (time.process_time() - start) * 1000 / calls
    finally:
        if owned is not None:
            await owned.aclose()


async def section(args: argparse.Namespace) -> None:
    rows: list[Row] = []
    with fake_ollama_process() as model:
        for in_flight in (1, 32):
            got: dict[str, list[float]] = {t: [] for t in TRANSPORTS}
            for _ in range(args.transport_reps):
                for t in TRANSPORTS:
                    got[t].append(await cpu_per_call(model.url, t, args.calls, in_flight))
            base, ours = statistics.median(got["httpx"]), statistics.median(got["httptools"])
            rows.append(
                (
                    f"ChatOllama streamed call, {in_flight} in flight: client CPU",
                    f"{base:.2f} ms {spread(got['httpx'])}",
                    f"{ours:.2f} ms {spread(got['httptools'])} = {ours / base:.2f}x",
                    "< 1x",
                    ours < base,
                )
            )
    print_table(("figure (fake Ollama at once)", "httpx's transport", "httptools transport (sophos)", "target"), rows)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--calls", type=int, default=600, help="model calls per measurement")
    parser.add_argument("--transport-reps", type=int, default=3, help="repetitions of each transport, alternating")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    import uvloop

    uvloop.run(section(parser.parse_args()))
