"""Hybrid ranking for any retrieval (the store's search, a file's passages, a collection's
chunks): the lexical ranker's order and the embedding's order fused by reciprocal rank
(domain.ranking), the embedding left out when none is configured."""

from __future__ import annotations

from collections.abc import Sequence

from domain.ranking import Vector, cosine, hybrid_scores
from ports.embeddings import EmbeddingPort
from ports.passages import PassageRanker


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
