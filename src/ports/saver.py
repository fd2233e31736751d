"""SaverPort: what the LangGraph engine reads from a checkpoint saver beyond LangGraph's
own interface, declared once instead of probed for. Every saver (SQLite, PostgreSQL,
memory) implements all of it; where a saver cannot answer cheaply, the method's contract
says what its answer means (None: read the thread through the graph instead)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from domain.branches import Branch
from domain.model import CheckpointSummary
from ports.attachments import AttachmentStore

MessageFields = Mapping[str, Any]
"""A stored message as the plain dict of its fields (`type`, `content`, `id`, ...), decoded
without building the framework's message objects."""


@dataclass(frozen=True)
class StoredHead:
    """The latest checkpoint of a thread's main graph, from its summary row."""

    checkpoint_id: str
    next: tuple[str, ...]  # the nodes it will run next
    message_count: int  # its own messages (without a pending input's)
    run_id: str | None  # the run that wrote it
    writes: int  # pending writes stored on it
    pending_input: int  # of which messages waiting as pending input (a new message)


@dataclass(frozen=True)
class BranchContent:
    """What a branch holds, to restore it: its messages and what its head had left to run."""

    messages: tuple[MessageFields, ...]
    next: tuple[str, ...]


class SaverPort(AttachmentStore, Protocol):
    """Reads of a thread (thread_id = conversation id) that LangGraph's saver interface
    has no word for. Each is one consistent read (one transaction), never blocks the event
    loop, and raises StorageFailure when the database cannot be read."""

    # whether the saver keeps the branches of a thread (a fork or switch in a checkpoint's
    # config is applied); without them, a thread is its latest checkpoint only
    keeps_branches: bool

    @abstractmethod
    async def head(self, thread_id: str) -> StoredHead | None:
        """The thread's latest checkpoint of its main graph; None for an unknown thread."""

    @abstractmethod
    async def history(self, thread_id: str) -> Sequence[CheckpointSummary]:
        """Every checkpoint the thread has had, oldest first, pruned ones included where
        the saver keeps a log of them."""

    @abstractmethod
    async def message_fields(self, thread_id: str, checkpoint_id: str) -> Sequence[MessageFields] | None:
        """The messages of one checkpoint of the main graph as plain fields. None: not
        available that way (unknown checkpoint, or not stored as plain data): read the
        thread through the graph."""

    @abstractmethod
    async def written_count(self, thread_id: str, run_id: str) -> int | None:
        """The message count of the latest checkpoint this saver wrote for the thread if
        the run `run_id` wrote it, answered without a read; None: ask `head`."""

    @abstractmethod
    async def branches(self, thread_id: str) -> Sequence[Branch]:
        """Every branch of the thread, by number; empty when it never forked."""

    @abstractmethod
    async def branch_content(self, thread_id: str, number: int) -> BranchContent | None:
        """The content of branch `number`, rebuilt from what is stored; None for an unknown
        branch. Raises NotSupported if the saver keeps no branches."""

    @abstractmethod
    async def reindex(self) -> int:
        """Rebuild the search index from every thread's latest checkpoint; the number of
        entries (0 where the saver feeds no index)."""

    @abstractmethod
    async def adelete_thread(self, thread_id: str) -> None:
        """Every checkpoint, write, log row and branch of the thread. Idempotent."""
