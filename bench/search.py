"""Search figures: query time over many conversations (server-side, through the app), for
typical queries and for every query the page sends while two words are typed, and what
indexing adds to a turn (the checkpointer's index write, timed inside real turns).
`--only search` runs the query figures alone, on SQLite and on PostgreSQL."""

from __future__ import annotations

import random
import sqlite3
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
from tests.support.app import app_env
from tests.support.long_thread import long_thread_harness

from bench.table import Row

MESSAGES = 20


def vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(size)]


def corpus(conversations: int) -> tuple[list[str], Iterator[tuple[str, list[str]]]]:
    """The vocabulary, and `conversations` (title, MESSAGES texts) with words drawn with a
    Zipf-like skew (the same on both backends)."""
    rng = random.Random(7)
    words = vocabulary(rng)
    weights = [1 / (i + 1) for i in range(len(words))]

    def items() -> Iterator[tuple[str, list[str]]]:
        for _ in range(conversations):
            title = " ".join(rng.choices(words, weights, k=4))
            yield title, [" ".join(rng.choices(words, weights, k=30)) for _ in range(MESSAGES)]

    return words, items()


def fill(db: Path, conversations: int) -> list[str]:
    """`conversations` of MESSAGES messages each, written by the index's own write path
    (index_thread, as the checkpointer calls it)."""
    from adapters.sqlite.runs import SqliteRunStore
    from adapters.sqlite.search import index_thread
    from adapters.sqlite.search_schema import stem_title
    from domain.model import AssistantMessage, UserMessage

    SqliteRunStore(str(db)).close()  # migrations
    words, items = corpus(conversations)
    conn = sqlite3.connect(db)
    conn.execute("BEGIN")
    cur = conn.cursor()
    for i, (title, texts) in enumerate(items):
        cid = str(uuid.uuid4())
        cur.execute(
            "INSERT INTO conversations (id, title, created_at, updated_at) VALUES (?, ?, ?, ?)",
            (cid, title, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"),
        )
        stem_title(cur, cid)  # as the run store does
        messages = [(UserMessage if j % 2 == 0 else AssistantMessage)(t, id=str(j)) for j, t in enumerate(texts)]
        index_thread(cur, cid, messages, lambda m: m, lambda m: m.id)
        if i % 1000 == 999:
            conn.commit()
            conn.execute("BEGIN")
    conn.commit()
    conn.close()
    return words


def typed(words: list[str]) -> list[str]:
    """What the page asks for while words are typed (from two letters on, the last word a
    prefix): every prefix of a word in ~15%, ~1% and ~0.1% of the messages and of a word
    in a few, then of a second word after a whole first one."""
    out = [w[:k] for w in (words[20], words[300], words[3000], words[4900]) for k in range(2, len(w) + 1)]
    return out + [f"{words[50]} {words[200][:k]}" for k in range(2, len(words[200]) + 1)]


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20, method="inclusive")[-1]


async def timed_queries(env: dict[str, str], words: list[str], label: str, note: str = "") -> list[Row]:
    """Median and worst server-side time of typical queries through the app; median and
    95th percentile of the queries sent while typing."""
    from entrypoints.container import close_container, create_container
    from entrypoints.http.app import create_app

    # words by frequency (Zipf-like): in ~15%, ~1% and ~0.1% of the messages; a phrase, a
    # prefix, two words. A word in nearly every message (a stop word) is timed apart.
    queries = [
        words[20],
        words[300],
        words[3000],
        f'"{words[20]} {words[40]}"',
        f"{words[100][:3]}*",
        f"{words[50]} {words[200]}",
    ]
    stop_word = words[0]
    container = create_container(env)
    app = create_app(container, manage_lifecycle=False)
    times: dict[str, float] = {}
    typing: list[float] = []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:

        async def timed(q: str) -> float:
            t = time.perf_counter()
            r = await client.get("/api/search", params={"q": q})
            elapsed = (time.perf_counter() - t) * 1000
            assert r.status_code == 200 and r.json()["results"], (q, r.text)
            return elapsed

        for q in [*queries, stop_word]:
            samples = [await timed(q) for _ in range(9)]
            times[q] = statistics.median(samples[1:])
        for q in typed(words):
            typing.append(statistics.median([await timed(q) for _ in range(3)]))
    await close_container(container)
    stop = times.pop(stop_word)
    kinds = dict(
        zip(queries, ("a word in 15%", "a word in 1%", "a word in 0.1%", "a phrase", "a prefix", "two words"), strict=True)
    )
    slowest = max(times, key=times.__getitem__)
    worst = times[slowest]
    median_typed = statistics.median(typing)
    return [
        (
            label + note,
            "-",
            f"median {statistics.median(times.values()):.1f} ms, worst {worst:.1f} ms ({kinds[slowest]}; "
            f"a word in 97% of messages: {stop:.0f} ms)",
            "<= 50 ms",
            worst <= 50,
        ),
        (
            f"{label}: as typed ({len(typing)} queries, each prefix of 2+ letters)",
            "-",
            f"median {median_typed:.1f} ms, p95 {p95(typing):.1f} ms, worst {max(typing):.1f} ms",
            "median <= 50 ms",
            median_typed <= 50,
        ),
    ]


async def query_time(tmp: Path, conversations: int) -> list[Row]:
    db = tmp / "search.db"
    words = fill(db, conversations)
    env = app_env(tmp, TOOLS_BACKEND="none", MODEL_BACKEND="demo", DATABASE_PATH=str(db))
    return await timed_queries(env, words, f"GET /api/search, {conversations} conversations x {MESSAGES} messages")


async def indexing_cost(tmp: Path, turns: int) -> Row:
    """Run `turns` real turns (a tool call and an answer each) and time the index writes
    inside each checkpoint's and each pending input's transaction against the whole turn."""
    import adapters.sqlite.saver as checkpointer

    spent = [0.0]
    written = [0]
    original: Callable[..., Any] = checkpointer.index_checkpoint
    original_input: Callable[..., Any] = checkpointer.index_input

    def timing(write: Callable[..., Any], checkpoint: bool) -> Callable[..., None]:
        def timed(*args: Any) -> None:
            t = time.perf_counter()
            write(*args)
            spent[0] += time.perf_counter() - t
            written[0] += checkpoint

        return timed

    checkpointer.index_checkpoint = timing(original, True)  # type: ignore[assignment]
    checkpointer.index_input = timing(original_input, False)  # type: ignore[assignment]
    try:
        h, saver, repo = long_thread_harness(tmp / "turns.db", turns)
        cid = None
        t0 = time.perf_counter()
        for i in range(1, turns + 1):
            started, _ = await h.send(f"{i} question about puffins", cid)
            cid = started.conversation_id
        total = time.perf_counter() - t0
        saver.close()
        repo.close()
    finally:
        checkpointer.index_checkpoint = original  # type: ignore[assignment]
        checkpointer.index_input = original_input  # type: ignore[assignment]
    share = spent[0] / (total - spent[0])
    return (
        f"search indexing per turn ({turns} turns, {written[0] / turns:.1f} checkpoints each)",
        "-",
        f"{spent[0] * 1000 / turns:.2f} ms of {total * 1000 / turns:.1f} ms = +{share:.1%}",
        "<= 10%",
        share <= 0.10,
    )


async def rows(tmp: Path, conversations: int, turns: int) -> list[Row]:
    return [*await query_time(tmp, conversations), await indexing_cost(tmp, min(turns, 100))]
