"""Hybrid ranking for any retrieval (the store's search, a file's passages, a collection's
chunks): the lexical ranker's order and the embedding's order fused by reciprocal rank
(domain.ranking), the embedding left out when none is configured."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from domain.errors import SophosError
from domain.knowledge import Candidate
from domain.ranking import Vector, cosine, hybrid_scores
from ports.embeddings import EmbeddingPort
from ports.knowledge import Ranker
from ports.passages import PassageRanker

log = logging.getLogger(__name__)


async def rank(
    query: str,
    candidates: Sequence[str],
    *,
    lexical: PassageRanker,
    embeddings: EmbeddingPort | None = None,
    vectors: Sequence[Vector | None] | None = None,
) -> list[float]:
    """One score per candidate, higher for a better match of `query` (0: matched by neither
    ranking). `vectors`: the candidates' embeddings when they are kept (an index's chunks),
    else the candidates are embedded now; a vector of another model or width is not compared.
    Raises what `embeddings` raises (ModelUnreachable, ModelBadResponse)."""
    scores = list(lexical.rank(query, candidates))
    if embeddings is None or not candidates or not query.strip():
        return scores
    asked = (await embeddings.embed([query]))[0]
    kept = list(vectors) if vectors is not None else list(await embeddings.embed(candidates))
    similarity = [
        cosine(v.values, asked.values) if v is not None and (v.model, v.dimensions) == (asked.model, asked.dimensions) else None
        for v in kept
    ]
    return hybrid_scores(scores, similarity)


class _IndexOrder(PassageRanker):
    """The order the passages came in (a full-text index's), as scores."""

    def rank(self, query: str, passages: Sequence[str]) -> Sequence[float]:
        return [1.0 / (i + 1) for i in range(len(passages))]


class HybridOrder(Ranker):
    """A knowledge collection's candidates (the full-text index's, best first) ordered by
    hybrid rank: that order fused (reciprocal rank fusion, domain.ranking) with each
    passage's similarity to the message, both embedded now (collections keep no vectors).
    When the embedding server fails, the full-text order stands: a message's passages are
    never lost to it (logged)."""

    def __init__(self, embeddings: EmbeddingPort) -> None:
        self.embeddings = embeddings

    async def rank(self, query: str, candidates: Sequence[Candidate]) -> Sequence[Candidate]:
        if len(candidates) < 2:
            return candidates
        try:
            scores = await rank(query, [c.text for c in candidates], lexical=_IndexOrder(), embeddings=self.embeddings)
        except SophosError as e:
            log.warning("the passages keep their full-text order: %s", e.message)
            return candidates
        return [candidates[i] for i in sorted(range(len(candidates)), key=lambda i: (-scores[i], i))]
