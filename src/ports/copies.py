"""ThreadCopies: a conversation's thread read whole, every branch, and written whole (an
import), through the checkpoint saver, so every storage backend offers it."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Protocol

from domain.transfer import BranchCopy


class ThreadCopies(Protocol):
    @abstractmethod
    async def read(self, thread_id: str) -> tuple[tuple[BranchCopy, ...], int]:
        """Every branch of the thread, numbered 1..n, each with its own messages (from its
        fork index on), and the active branch's number. A thread never forked is branch 1
        with every message; an unknown thread is branch 1 with none."""

    @abstractmethod
    async def write(self, thread_id: str, branches: Sequence[BranchCopy], active: int) -> None:
        """Write a new thread holding these branches (checked by domain.transfer), with
        `active` the active one; no branch is left with work to do (nothing resumes, no
        tool call is pending). The cost is the messages', not the branches' (each message
        stored once, a branch sharing its prefix as a fork does), and the CPU-bound part is
        not done on the event loop. Raises NotSupported, before writing anything, for
        several branches on a saver that keeps none. A failure part-way leaves a partial
        thread for the caller to delete."""
