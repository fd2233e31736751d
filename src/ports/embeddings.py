"""EmbeddingPort: texts as vectors, from the configured model server (`EMBEDDING_MODEL`)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Protocol

from domain.ranking import Vector


class EmbeddingPort(Protocol):
    """One vector per text, in order, each of unit length and of one width for the life of
    the adapter (a server that changes the width mid-way is refused). Bounded: the texts
    go in batches, each text cut to a length the adapter states; a response past its size
    bound, of another count or width, or with a value that is not a finite number raises
    ModelBadResponse; a server that does not answer in time or refuses raises
    ModelUnreachable (domain.errors), naming the server and the model."""

    model: str

    @abstractmethod
    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        """The texts' vectors (none for no text)."""

    @abstractmethod
    async def aclose(self) -> None:
        """Close the connections to the server."""
