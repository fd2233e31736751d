"""Branches on linear storage: a 300-turn conversation with 20 branches (each an edit of
the last question, the conversation going on from the edit; then a switch to every branch)
against the same conversation without branches, on real SQLite files."""

from __future__ import annotations

import statistics
from pathlib import Path

from tests.support.branchy import branchy_thread

from bench.table import Row


def mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


async def section(tmp: Path, turns: int, branches: int = 20) -> list[Row]:
    plain = await branchy_thread(tmp / "plain.db", turns, 0)
    forked = await branchy_thread(tmp / "branches.db", turns, branches)
    ratio = forked.size / plain.size
    switch = statistics.median(forked.switch_ms)
    return [
        (
            f"database size, {turns} turns with {branches} branches / without",
            "(no branches)",
            f"{mb(forked.size)} / {mb(plain.size)} = {ratio:.2f}x",
            "<= 2x",
            ratio <= 2,
        ),
        (
            f"switch branch ({turns}-turn thread, median of {len(forked.switch_ms)})",
            "(no branches)",
            f"{switch:.0f} ms",
            "(measured)",
            True,
        ),
    ]
