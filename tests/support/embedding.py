"""Deterministic embeddings for tests: a text's vector counts its words by concept, so
synonyms ("car", "automobile") land together and a query finds by meaning what it does not
share a word with. The fake servers (fake_ollama's /api/embed, fake_openai's /v1/embeddings)
answer with these."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the fake servers run as processes of their own, without src on the path
    from domain.ranking import Vector

CONCEPTS = (
    ("car", "cars", "automobile", "vehicle", "sedan"),
    ("boat", "ship", "vessel", "sailing", "yacht"),
    ("dog", "puppy", "canine", "hound"),
    ("coffee", "espresso", "latte", "caffeine"),
    ("birthday", "anniversary", "celebration"),
    ("allergy", "allergic", "peanut", "peanuts"),
)
DIMENSIONS = len(CONCEPTS) + 2  # and two for every other word, by its length's parity


def concept_values(text: str) -> list[float]:
    values = [0.0] * DIMENSIONS
    for word in re.findall(r"\w+", text.casefold()):
        for i, words in enumerate(CONCEPTS):
            if word in words:
                values[i] += 1.0
                break
        else:
            values[len(CONCEPTS) + len(word) % 2] += 0.1
    return values


def concept_vector(text: str, model: str = "fake-embed") -> Vector:
    from domain.ranking import Vector, unit

    return Vector(model, unit(concept_values(text)))
