"""AttachmentStore: the files user messages carry, kept by the checkpoint saver that
writes the messages (so a message and its files are committed together)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Protocol

from domain.attachments import StoredFile, Upload


class AttachmentStore(Protocol):
    """Each file is stored once, by the SHA-256 of its bytes, with a reference per
    conversation that holds it; deleting a thread drops its references and the files no
    other conversation holds."""

    @abstractmethod
    def stage_files(self, thread_id: str, uploads: Sequence[Upload]) -> None:
        """Keep `uploads` for the write of the message that carries them: the write that
        first stores a user message referring to a staged file stores the file in its own
        transaction (a crash leaves both or neither). Not a write itself."""

    @abstractmethod
    def unstage_files(self, thread_id: str) -> None:
        """Forget what is still staged for the thread (its run ended)."""

    @abstractmethod
    async def release_files(self, thread_id: str, digests: Sequence[str]) -> None:
        """The thread no longer holds these files (the message that carried them was never
        acknowledged and was dropped): its references go, and the files no other
        conversation holds. Idempotent."""

    @abstractmethod
    async def files(self, thread_id: str, digests: Sequence[str]) -> Mapping[str, StoredFile]:
        """The stored files among `digests` that the thread holds; a digest it does not
        hold (never sent there, or from another conversation) is absent."""


class TextExtractor(Protocol):
    """The text of a document the model cannot read as it is (a PDF)."""

    @abstractmethod
    async def pdf_text(self, name: str, data: bytes) -> str:
        """The PDF's text, bounded in time and length; AttachmentUnreadable (naming the
        file) when it cannot be read: damaged, encrypted, or with no text at all (a scan)."""
