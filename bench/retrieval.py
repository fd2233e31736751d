"""Retrieval quality and cost (issue 45): recall@10 and nDCG@10 of Sophos's hybrid ranking
beside BM25 alone and the embedding alone, and the store's indexing and query times at
10,000 chunks on SQLite and PostgreSQL. `python -m bench --only retrieval` (make bench-retrieval).

The set: no public retrieval set with judgements is on the package indexes reachable here
(BEIR's and ir_datasets' data download from elsewhere at run time), so it is built from a
public corpus that ships in a package: CPython's `pydoc_data.topics` (the language
reference's topics, ~76 of them, cut into ~1,200-character passages as domain.passages cuts
files), with 62 questions in a user's words and their relevant topics written by hand once,
before any system ran on them, and frozen (bench/retrieval_judgements.json says how). A
topic is retrieved at the rank of its best passage (MaxP); relevance is binary.

The embedding model is wordllama's (`l2_supercat`, 256 dimensions), whose weights ship in
its wheel (the bench extra, requirements-bench.lock; not a runtime dependency); in
production the same seam takes Ollama's or an OpenAI-compatible server's model.
Systems: BM25 alone is `bm25s` (Lucene's BM25, English stemmer and stop words); Sophos's full
text alone is its FTS5 ranking (adapters/files/passages.py); hybrid is
services.retrieval.rank (reciprocal rank fusion, domain.ranking) over that full text and the
embedding; "store" is the store's own hybrid search (SQLite, items with vectors) taking its
best 50 passages."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from adapters.files.passages import Bm25Passages
from adapters.postgres.database import PostgresDatabase
from adapters.postgres.store import PostgresStore
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.store import SqliteStore
from bench.table import Row, print_table
from domain.passages import split_passages
from domain.ranking import Vector, cosine, unit
from domain.store import PutItem, SearchItems
from ports.embeddings import EmbeddingPort
from ports.passages import PassageRanker
from ports.store import StorePort
from services.retrieval import rank

JUDGEMENTS = Path(__file__).resolve().parent / "retrieval_judgements.json"
K = 10
CHUNKS = 10_000
MODEL = "wordllama-l2_supercat-256"


class WordLlamaEmbeddings(EmbeddingPort):
    """wordllama's model, in process (the bench extra): the weights and tokenizer from its wheel.
    wordllama 0.4.0 looks for the tokenizer under `tokenizer/` but ships it under `tokenizers/`,
    hence the package directory as its cache."""

    model = MODEL

    def __init__(self) -> None:
        import wordllama
        from wordllama import WordLlama

        self._wl = WordLlama.load(dim=256, cache_dir=Path(wordllama.__file__).parent, disable_download=True)

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        return [Vector(self.model, unit([float(x) for x in row])) for row in self._wl.embed(list(texts))]

    async def aclose(self) -> None:
        pass


class Bm25s(PassageRanker):
    """`bm25s` over the passages of one ranking (the index built once, in `__init__`)."""

    def __init__(self, passages: Sequence[str]) -> None:
        import bm25s
        import Stemmer

        self._bm25s, self._stemmer = bm25s, Stemmer.Stemmer("english")
        self._passages = list(passages)
        self._index = bm25s.BM25()
        self._index.index(
            bm25s.tokenize(self._passages, stopwords="en", stemmer=self._stemmer, show_progress=False), show_progress=False
        )

    def rank(self, query: str, passages: Sequence[str]) -> Sequence[float]:
        assert list(passages) == self._passages  # one index, one set of passages
        words = self._bm25s.tokenize([query], stopwords="en", stemmer=self._stemmer, return_ids=False, show_progress=False)[0]
        return [float(s) for s in self._index.get_scores(words)]


def corpus() -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """(passages, the topic of each, the queries) of the frozen set."""
    from pydoc_data.topics import topics

    judged = json.loads(JUDGEMENTS.read_text(encoding="utf-8"))
    passages, owners = [], []
    for name in sorted(set(topics) - set(judged["excluded"])):
        for p in split_passages(topics[name]):
            passages.append(p.text)
            owners.append(name)
    return passages, owners, judged["queries"]


def topic_order(scores: Sequence[float], owners: Sequence[str], keep_zero: bool) -> list[str]:
    """The topics in the order of their best passage (MaxP), best first."""
    seen: dict[str, None] = {}
    for i in sorted(range(len(scores)), key=lambda i: (-scores[i], i)):
        if scores[i] > 0 or keep_zero:
            seen.setdefault(owners[i], None)
    return list(seen)


def recall_ndcg(found: Sequence[str], relevant: Sequence[str]) -> tuple[float, float]:
    top = list(found)[:K]
    hits = [1.0 if t in relevant else 0.0 for t in top]
    dcg = sum(h / math.log2(i + 2) for i, h in enumerate(hits))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), K)))
    return sum(hits) / len(relevant), dcg / ideal


async def quality(embedder: WordLlamaEmbeddings, tmp: Path) -> list[Row]:
    passages, owners, queries = corpus()
    started = time.perf_counter()
    vectors = await embedder.embed(passages)
    embed_s = time.perf_counter() - started
    fts, bm25 = Bm25Passages(), Bm25s(passages)
    store, close = await sqlite_store(tmp / "quality.db")
    await put_all(store, passages, vectors)
    systems: dict[str, list[tuple[float, float]]] = {
        name: [] for name in ("bm25s", "fts", "embedding", "hybrid", "hybrid-bm25s", "store")
    }
    for q in queries:
        text, relevant = q["q"], q["relevant"]
        asked = (await embedder.embed([text]))[0]
        similarity = [cosine(v.values, asked.values) for v in vectors]
        orders = {
            "bm25s": topic_order(bm25.rank(text, passages), owners, False),
            "fts": topic_order(fts.rank(text, passages), owners, False),
            "embedding": topic_order(similarity, owners, True),
            "hybrid": topic_order(await rank(text, passages, lexical=fts, embeddings=embedder, vectors=vectors), owners, False),
            "hybrid-bm25s": topic_order(
                await rank(text, passages, lexical=bm25, embeddings=embedder, vectors=vectors), owners, False
            ),
        }
        found = await store.search("bench", SearchItems(("p",), query=text, limit=50), NOW, asked)
        orders["store"] = list(dict.fromkeys(owners[int(i.key)] for i in found))
        for name, order in orders.items():
            systems[name].append(recall_ndcg(order, relevant))
    await close()
    print(f"{len(passages)} passages of {len(set(owners))} topics, {len(queries)} queries; embedding them took {embed_s:.1f} s")
    labels = {
        "bm25s": "BM25 alone (bm25s)",
        "fts": "Sophos full text alone (FTS5)",
        "embedding": "embedding alone (wordllama)",
        "hybrid": "hybrid: rank() over FTS5 + embedding",
        "hybrid-bm25s": "hybrid: rank() over bm25s + embedding",
        "store": "hybrid: the store's search (SQLite)",
    }
    best_single = max(statistics.mean(r for r, _ in systems[s]) for s in ("bm25s", "embedding"))
    best_ndcg = max(statistics.mean(n for _, n in systems[s]) for s in ("bm25s", "embedding"))
    rows: list[Row] = []
    for name, label in labels.items():
        r, n = statistics.mean(x for x, _ in systems[name]), statistics.mean(y for _, y in systems[name])
        hybrid = name.startswith("hybrid") or name == "store"
        target = f">= {best_single:.3f} / {best_ndcg:.3f}" if hybrid else ""
        rows.append((label, f"{r:.3f}", f"{n:.3f}", target, not hybrid or (r >= best_single and n >= best_ndcg)))
    return rows


NOW = datetime(2026, 12, 7, tzinfo=UTC)


async def put_all(store: StorePort, texts: Sequence[str], vectors: Sequence[Vector], batch: int = 64) -> None:
    for first in range(0, len(texts), batch):
        await asyncio.gather(
            *(
                store.put("bench", PutItem(("p",), str(i), {"text": texts[i]}), NOW, vectors[i])
                for i in range(first, min(len(texts), first + batch))
            )
        )


async def sqlite_store(path: Path) -> tuple[StorePort, Callable[[], Awaitable[None]]]:
    runs = await SqliteRunStore.open(str(path))
    return SqliteStore(*runs.workers()), runs.aclose


async def median_ms(times: int, call: Callable[[], Awaitable[object]]) -> float:
    spent = []
    for _ in range(times):
        start = time.perf_counter()
        await call()
        spent.append(time.perf_counter() - start)
    return statistics.median(spent) * 1000


async def scale(name: str, store: StorePort, texts: Sequence[str], vectors: Sequence[Vector], asked: Vector) -> list[Row]:
    """Index CHUNKS chunks (64 puts at a time, each durable), then time a query at CHUNKS."""
    started = time.perf_counter()
    await put_all(store, texts, vectors)
    indexing = time.perf_counter() - started
    query = SearchItems(("p",), query="make sure a file is closed after an error")
    hybrid = await median_ms(20, lambda: store.search("bench", query, NOW, asked))
    words = await median_ms(20, lambda: store.search("bench", query, NOW))
    return [
        (f"{name}: index {CHUNKS:,} chunks with vectors", "", f"{indexing:.1f} s ({CHUNKS / indexing:.0f}/s)", "", True),
        (f"{name}: a hybrid query at {CHUNKS:,} chunks", "", f"{hybrid:.1f} ms", "", True),
        (f"{name}: a full-text query at {CHUNKS:,} chunks", "", f"{words:.1f} ms", "", True),
    ]


async def timings(embedder: WordLlamaEmbeddings, tmp: Path) -> list[Row]:
    from tests.support.postgres import postgres_server

    from adapters.sqlite import vectors as sqlite_vectors

    passages, _, _ = corpus()
    texts = [f"{passages[i % len(passages)]}\n(copy {i // len(passages)})" for i in range(CHUNKS)]
    started = time.perf_counter()
    vectors = await embedder.embed(texts)
    rows: list[Row] = [
        (f"embed {CHUNKS:,} chunks (wordllama, in process)", "", f"{time.perf_counter() - started:.1f} s", "", True)
    ]
    asked = (await embedder.embed(["make sure a file is closed after an error"]))[0]
    store, close = await sqlite_store(tmp / "scale.db")
    import sqlite3

    how = sqlite_vectors.install(sqlite3.connect(":memory:"))
    rows += await scale(f"SQLite (vec_distance_cosine: {how})", store, texts, vectors, asked)
    await close()
    with postgres_server(durable=True) as url:
        db = PostgresDatabase(url)
        rows += await scale("PostgreSQL (real[], cosine in SQL)", PostgresStore(db), texts, vectors, asked)
        await db.close()
    return rows


# the vector leg's SQL alone, over 10,000 vectors of 256 dimensions: run by the bench's Python
# (the fallback, when its sqlite3 cannot load extensions) and by a Python that can (sqlite-vec)
NEAREST = """
import sys, sqlite3, random, struct, time, statistics
sys.path[:0] = sys.argv[1].split(":")
from adapters.sqlite.vectors import install
conn = sqlite3.connect(":memory:")
how = install(conn)
rows = [struct.pack("<256f", *[random.gauss(0, 1) / 16 for _ in range(256)]) for _ in range(10000)]
conn.execute("CREATE TABLE t (embedding BLOB, value TEXT)")
conn.executemany("INSERT INTO t VALUES (?, ?)", [(r, "x" * 1200) for r in rows])
spent = []
for _ in range(5):
    start = time.perf_counter()
    conn.execute("SELECT value, vec_distance_cosine(embedding, ?) AS d FROM t ORDER BY d LIMIT 50", (rows[0],)).fetchall()
    spent.append(time.perf_counter() - start)
print(how, round(statistics.median(spent) * 1000, 1))
"""


def nearest_figures() -> list[Row]:
    """The vector leg over 10,000 vectors by each `vec_distance_cosine` this machine has: this
    Python's, and sqlite-vec's under a Python that can load extensions (Debian's python3)."""
    import subprocess
    import sys

    import sqlite_vec

    src = str(Path(__file__).resolve().parents[1] / "src")
    rows: list[Row] = []
    for python in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
        if not Path(python).exists():
            continue
        paths = src + ":" + str(Path(sqlite_vec.__file__).parents[1])
        done = subprocess.run([python, "-c", NEAREST, paths], capture_output=True, text=True, timeout=600)
        if done.returncode == 0:
            how, ms = done.stdout.split()
            rows.append((f"nearest 50 of 10,000 vectors by SQL ({how}, {python})", "", f"{ms} ms", "", True))
    return rows


async def section(args: argparse.Namespace) -> None:
    """`--only retrieval`: quality on the frozen set, then the 10,000-chunk timings."""
    tmp = Path(tempfile.mkdtemp(prefix="sophos-bench-retrieval-"))
    try:
        embedder = WordLlamaEmbeddings()
        print_table(("system", "recall@10", "nDCG@10", "target (recall / nDCG)"), await quality(embedder, tmp))
        print()
        print_table(("figure", "baseline", "sophos", "target"), await timings(embedder, tmp) + nearest_figures(), met=False)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(section(argparse.Namespace()))
