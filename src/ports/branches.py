"""BranchPort: the branches of a conversation's thread (see domain.branches)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Protocol

from domain.branches import Branch
from domain.model import Message


class BranchPort(Protocol):
    """Branches are recorded by the checkpoint store, in the transaction of the checkpoint
    that makes them (a Fork run's first checkpoint, a switch), so they never disagree
    with the thread."""

    @abstractmethod
    async def branches(self, thread_id: str) -> Sequence[Branch]:
        """Every branch of the thread, by number; empty for a thread never forked (its
        one branch is number 1)."""

    @abstractmethod
    async def seed_thread(self, thread_id: str, messages: Sequence[Message], source: str | None = None) -> None:
        """Write `messages` as the first checkpoint of the new thread `thread_id` (a
        conversation forked from another): nothing left to run after an answer, the agent's
        turn after a user's message (a resume answers it). Every message keeps its fields;
        the files its messages carry, held by the thread `source`, are held by the new
        thread too, from the same checkpoint's transaction."""

    @abstractmethod
    async def branch_messages(self, thread_id: str, number: int) -> Sequence[Message] | None:
        """The messages of branch `number` as its head holds them (rebuilt from what is
        stored, as a switch would restore them); None for an unknown branch."""

    @abstractmethod
    async def switch_branch(self, thread_id: str, number: int) -> int:
        """Make branch `number` the active one: its head becomes the thread's latest
        checkpoint (and the conversation's message count and last update are its), in
        one committed transaction. Raises BranchNotFound for an unknown number and
        SessionInProgress when a run of the conversation is running (checked in that
        transaction). Switching to the active branch changes nothing. Returns the active
        branch's message count."""
