"""Hybrid ranking (domain.ranking, services.retrieval.rank): reciprocal rank fusion of a
lexical ranking and an embedding's, the embedding left out when none is configured."""

from __future__ import annotations

from collections.abc import Sequence

from adapters.files.passages import Bm25Passages
from domain.ranking import Vector, fuse, hybrid_scores, unit
from ports.embeddings import EmbeddingPort
from services.retrieval import rank
from tests.support.embedding import concept_vector


class ConceptEmbeddings(EmbeddingPort):
    model = "fake-embed"

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.asked.extend(texts)
        return [concept_vector(t) for t in texts]

    async def aclose(self) -> None:
        pass


def test_fusion_sums_reciprocal_ranks_and_keeps_first_appearance_on_ties() -> None:
    fused = fuse([["a", "b", "c"], ["c", "b", "d"]], k=60)
    assert [k for k, _ in fused] == ["c", "b", "a", "d"]  # 1/61 + 1/63 is just above 2/62
    assert dict(fused)["b"] == 2 / 62 and dict(fused)["a"] == 1 / 61
    assert [k for k, _ in fuse([["x", "y"], ["y", "x"]])] == ["x", "y"]


def test_hybrid_scores_leave_out_no_match_and_order_as_lexical_without_vectors() -> None:
    assert hybrid_scores([0.0, 3.0, 1.0], [None, None, None]) == [0.0, 1 / 61, 1 / 62]
    both = hybrid_scores([0.0, 3.0, 1.0], [0.9, None, 0.8])
    assert both[2] > both[0] > 0 and both[2] > both[1]
    assert unit([3.0, 4.0]) == (0.6, 0.8) and unit([0.0, 0.0]) == (0.0, 0.0)


async def test_rank_finds_by_meaning_what_shares_no_word_and_by_words_without_embeddings() -> None:
    passages = ["The yacht leaves at dawn", "My sedan is red", "Automobile insurance forms", "Walk the puppy"]
    lexical_only = await rank("automobile", passages, lexical=Bm25Passages())
    assert [s > 0 for s in lexical_only] == [False, False, True, False]
    embeddings = ConceptEmbeddings()
    hybrid = await rank("automobile", passages, lexical=Bm25Passages(), embeddings=embeddings)
    best = sorted(range(len(passages)), key=lambda i: -hybrid[i])
    assert best[:2] == [2, 1] and embeddings.asked == ["automobile", *passages]
    kept = [concept_vector(p) for p in passages[:3]] + [concept_vector(passages[3], model="other")]
    again = await rank("automobile", passages, lexical=Bm25Passages(), embeddings=embeddings, vectors=kept)
    assert again[3] == 0.0 and again[:3] == hybrid[:3]  # kept vectors are not embedded again; another model's not compared
    assert embeddings.asked == ["automobile", *passages, "automobile"]
