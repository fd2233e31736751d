"""Imports at the documented limits (issue 42, items 5 and 6): one conversation of 20,000
messages in 200 branches, each forked near the end (so each branch's whole content is nearly
all of them: written as a full copy per branch, that was 200 copies), against a plain chain
of as many messages, in both formats import reads; the CPU of the whole process (event loop,
import worker, saver thread), the file it leaves, and the event loop's longest stall meanwhile.
Each import on a fresh SQLite file, through the HTTP app in process, LangGraph loaded first."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tests.support.app import app_env
from tests.support.imports import import_cpu, late_forks_chatgpt, late_forks_document, plain_document
from tests.support.long_thread import file_size

from bench.table import Row

MESSAGES, BRANCHES = 20_000, 200  # docs/api.md: 20 000 messages and 200 branches per conversation


@dataclass
class Imported:
    cpu: float  # seconds, every thread of the process and its import worker
    wall: float
    stall: float  # the event loop's longest gap between two 5 ms sleeps
    size: int  # bytes of the database file after it
    megabytes: float  # of the file imported


async def _import(tmp: Path, doc: Any) -> Imported:
    from entrypoints.container import close_container, create_container
    from entrypoints.http.app import create_app

    tmp.mkdir(parents=True)
    db = tmp / "sophos.db"
    container = create_container(app_env(tmp, MODEL_BACKEND="demo", TOOLS_BACKEND="none", DATABASE_PATH=str(db)))
    app = create_app(container, manage_lifecycle=False)
    body = json.dumps(doc).encode()
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://testserver", timeout=3600
        ) as client:
            warm = (await client.post("/api/import", content=json.dumps(late_forks_document(4, 2)).encode())).status_code
            assert warm == 201  # LangGraph loaded: its import is no part of the figure
            gaps: list[float] = []
            done = asyncio.Event()

            async def ticking() -> None:
                last = time.perf_counter()
                while not done.is_set():
                    await asyncio.sleep(0.005)
                    now = time.perf_counter()
                    gaps.append(now - last)
                    last = now

            ticker = asyncio.create_task(ticking())
            cpu, wall = import_cpu(container), time.perf_counter()  # the server's and its import worker's
            r = await client.post("/api/import", content=body)
            cpu, wall = import_cpu(container) - cpu, time.perf_counter() - wall
            done.set()
            await ticker
            assert r.status_code == 201, r.text[:300]
    finally:
        await close_container(container)
    return Imported(cpu, wall, max(gaps), file_size(db), len(body) / 1e6)


def _rows(name: str, plain: Imported, forked: Imported) -> list[Row]:
    limit = max(30.0, 4 * plain.cpu)
    return [
        (
            f"{name}: import CPU, {MESSAGES} messages in {BRANCHES} branches ({forked.megabytes:.1f} MB) / one chain",
            f"{plain.cpu:.1f} s",
            f"{forked.cpu:.1f} s = {forked.cpu / plain.cpu:.2f}x (wall {forked.wall:.1f} s)",
            f"<= max(30 s, 4x) = {limit:.0f} s",
            forked.cpu <= limit,
        ),
        (
            f"{name}: database after it / one chain",
            f"{plain.size / 1e6:.1f} MB",
            f"{forked.size / 1e6:.1f} MB = {forked.size / plain.size:.2f}x",
            "(measured)",
            True,
        ),
        (
            f"{name}: event loop's longest stall during it",
            f"{plain.stall * 1000:.0f} ms",
            f"{forked.stall * 1000:.0f} ms",
            "(measured)",
            True,
        ),
    ]


async def section(base: Path) -> list[Row]:
    rows: list[Row] = []
    cases: list[tuple[str, Callable[[int, int], Any], Callable[[int], Any]]] = [
        ("sophos.conversation", late_forks_document, plain_document),
        ("ChatGPT", late_forks_chatgpt, lambda n: late_forks_chatgpt(n, 1)),
    ]
    for name, forked, plain in cases:
        slug = name.split(".")[0].lower()
        one = await _import(base / f"{slug}-plain", plain(MESSAGES))
        many = await _import(base / f"{slug}-branches", forked(MESSAGES, BRANCHES))
        rows += _rows(name, one, many)
    return rows
