"""A checkpoint port built on first use, so that listing conversations never loads LangGraph."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from domain.branches import Branch
from domain.errors import NotSupported
from domain.model import CheckpointSummary, Message, ThreadHead, ThreadState
from domain.transfer import BranchCopy
from ports.branches import BranchPort
from ports.checkpoints import CheckpointPort
from ports.copies import ThreadCopies


class LazyCopies(ThreadCopies):
    """ThreadCopies built on first use (an export or an import builds the graph)."""

    def __init__(self, build: Callable[[], ThreadCopies]) -> None:
        self._build = build

    async def read(self, thread_id: str) -> tuple[tuple[BranchCopy, ...], int]:
        return await self._build().read(thread_id)

    async def write(self, thread_id: str, branches: Sequence[BranchCopy], active: int) -> None:
        await self._build().write(thread_id, branches, active)


class LazyThreads(CheckpointPort, BranchPort):
    """A CheckpointPort built on first use: listing conversations never loads LangGraph."""

    def __init__(self, build: Callable[[], CheckpointPort]) -> None:
        self._build = build

    async def get_thread(self, thread_id: str) -> ThreadState:
        return await self._build().get_thread(thread_id)

    async def head(self, thread_id: str) -> ThreadHead:
        return await self._build().head(thread_id)

    async def count_written(self, thread_id: str, run_id: str) -> int:
        return await self._build().count_written(thread_id, run_id)

    async def list_checkpoints(self, thread_id: str) -> Sequence[CheckpointSummary]:
        return await self._build().list_checkpoints(thread_id)

    async def delete_thread(self, thread_id: str) -> None:
        await self._build().delete_thread(thread_id)

    def _branch_port(self) -> BranchPort | None:
        built = self._build()
        return cast(BranchPort, built) if hasattr(built, "switch_branch") else None

    async def branches(self, thread_id: str) -> Sequence[Branch]:
        port = self._branch_port()
        return await port.branches(thread_id) if port else []

    async def seed_thread(self, thread_id: str, messages: Sequence[Message], source: str | None = None) -> None:
        port = self._branch_port()
        if port is None:
            raise NotSupported("This checkpoint store cannot fork conversations")
        await port.seed_thread(thread_id, messages, source)

    async def branch_messages(self, thread_id: str, number: int) -> Sequence[Message] | None:
        port = self._branch_port()
        return await port.branch_messages(thread_id, number) if port else None

    async def switch_branch(self, thread_id: str, number: int) -> int:
        port = self._branch_port()
        if port is None:
            raise NotSupported("This checkpoint store does not keep branches")
        return await port.switch_branch(thread_id, number)
