"""PassageRanker: how well each passage of a file matches a message (domain.passages
chooses what a model call sends of a file too long for its share of the prompt)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Protocol


class PassageRanker(Protocol):
    @abstractmethod
    def rank(self, query: str, passages: Sequence[str]) -> Sequence[float]:
        """One score per passage, higher for a better match of `query`; 0 for a passage that
        shares no word with it. Bounded work: called with at most domain.passages.MAX_PASSAGES."""
