"""Hybrid ranking (issue 45): an embedding's order and full text's order of the same
candidates, fused by reciprocal rank (Cormack, Clarke and Büttcher, SIGIR 2009): each list
gives a candidate 1 / (K + its rank), the sums order the result. Ranks, not scores, are
fused, so BM25's unbounded scores and cosines need no common scale.

Pure functions over plain values, used by the store's three backends and by any other
retrieval (services.retrieval.rank)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

RRF_K = 60  # the paper's constant: a candidate's rank counts, its first places not overwhelmingly
MAX_DIMENSIONS = 16_384  # the widest embedding Sophos reads (OpenAI's largest is 3,072)

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Vector:
    """An embedding of unit length, and the model that made it: vectors of two models (or of
    two widths) are never compared."""

    model: str
    values: tuple[float, ...]

    @property
    def dimensions(self) -> int:
        return len(self.values)


def unit(values: Sequence[float]) -> tuple[float, ...]:
    """`values` scaled to length 1 (so a dot product is the cosine); a zero vector stays zero."""
    norm = math.sqrt(math.fsum(v * v for v in values))
    return tuple(float(v) / norm for v in values) if norm > 0 else tuple(0.0 for _ in values)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two unit vectors of one width (their dot product)."""
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def fuse(rankings: Iterable[Sequence[K]], k: int = RRF_K) -> list[tuple[K, float]]:
    """Reciprocal rank fusion: every candidate of any ranking (best first) with its fused
    score, best first; a tie keeps the order of first appearance."""
    scores: dict[K, float] = {}
    for ranking in rankings:
        for place, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + place)
    order = {key: i for i, key in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))


def ranked(scores: Sequence[float], keep_zero: bool = False) -> list[int]:
    """The indexes of `scores`, highest first (ties in index order); zeros left out unless
    `keep_zero` (a lexical score of 0 is no match)."""
    return sorted((i for i, s in enumerate(scores) if keep_zero or s > 0), key=lambda i: (-scores[i], i))


def hybrid_scores(lexical: Sequence[float], similarity: Sequence[float | None], k: int = RRF_K) -> list[float]:
    """One fused score per candidate (higher: better; 0: in neither ranking) from its lexical
    score (0: no match, left out of that ranking) and its cosine with the query (None: it has
    no vector). Without any similarity this orders as `lexical` does."""
    near = sorted((i for i, s in enumerate(similarity) if s is not None), key=lambda i: (-(similarity[i] or 0.0), i))
    fused = dict(fuse([ranked(lexical), near], k))
    return [fused.get(i, 0.0) for i in range(len(lexical))]
