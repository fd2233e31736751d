"""A knowledge collection's passages ranked hybrid when EMBEDDING_MODEL is set
(services.retrieval.HybridOrder): the full-text order fused with each passage's similarity to
the message, so a passage that says what was asked in other words comes up; the full-text
order stands when the embedding server fails."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from domain.errors import ModelUnreachable
from domain.knowledge import Candidate
from domain.ranking import Vector
from entrypoints.container import close_container, create_container
from services.retrieval import HybridOrder
from tests.support.app import app_env
from tests.support.embedding import concept_vector


class Concepts:
    model = "fake-embed"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.asked: list[str] = []

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        if self.fail:
            raise ModelUnreachable("the embedding server is down")
        self.asked.extend(texts)
        return [concept_vector(t) for t in texts]

    async def aclose(self) -> None:
        return None


def candidate(n: int, text: str) -> Candidate:
    return Candidate("notes", "notes.md", n, n, text, 1.0 / n)


# the full-text index's order: the first two share the message's words, the third its meaning
FOUND = [
    candidate(1, "which puppy food the shop sells, and at what time the shop opens"),
    candidate(2, "the shop keeps its receipts in a drawer"),
    candidate(3, "Rex the hound is allergic to peanuts"),
]


async def test_a_passage_that_says_it_in_other_words_comes_up() -> None:
    ranked = await HybridOrder(Concepts()).rank("what is my dog allergic to at the shop", FOUND)
    # fused by reciprocal rank: the hound's allergy (third by words, first by meaning) passes
    # the receipts (second by words, last by meaning); the puppy food, first by words and
    # second by meaning, stays first
    assert [c.first for c in ranked] == [1, 3, 2]


async def test_the_full_text_order_stands_when_the_embedding_server_fails() -> None:
    assert list(await HybridOrder(Concepts(fail=True)).rank("dog allergy", FOUND)) == FOUND


async def test_the_container_ranks_collections_hybrid_only_with_an_embedding_model(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    plain = create_container(app_env(tmp_path / "a", MODEL_BACKEND="ollama", TOOLS_BACKEND="none"))
    hybrid = create_container(
        app_env(tmp_path / "b", MODEL_BACKEND="ollama", TOOLS_BACKEND="none", EMBEDDING_MODEL="nomic-embed-text")
    )
    try:
        assert not isinstance(plain.knowledge().ranker, HybridOrder)
        ranker = hybrid.knowledge().ranker
        assert isinstance(ranker, HybridOrder) and ranker.embeddings.model == "nomic-embed-text"
    finally:
        await close_container(plain)
        await close_container(hybrid)
