"""ThreadCopies over the graph and its saver: a thread read branch by branch, and written
in the saver's own branch storage (a delta per left branch, the active one as the head), so
an import costs what its messages do, not what each branch's copy of its prefix would."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from uuid import uuid4

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END

from adapters.langchain.messages import from_fields, to_langchain
from adapters.langgraph.engine import LangGraphThreads
from adapters.langgraph.saver import Saver
from domain.branches import Branch, lineage
from domain.errors import NotSupported
from domain.model import Message
from domain.transfer import BranchCopy
from ports.copies import ThreadCopies
from ports.workers import Worker

HEAD_STEP = 1000


def _built(branches: Sequence[BranchCopy], active: int) -> tuple[dict[int, list[BaseMessage]], list[BaseMessage]]:
    """Each branch's own messages built once, each with an id of its own, and the whole
    message list of the active branch (its lineage's prefixes, then its own), sharing them."""
    own: dict[int, list[BaseMessage]] = {
        b.number: [to_langchain(replace(m, id=str(uuid4()))) for m in b.messages] for b in branches
    }
    head: list[BaseMessage] = []
    for b in lineage([Branch(x.number, x.parent, x.fork, 0, False) for x in branches], active):
        head = head[: b.fork] + own[b.number]
    return own, head


def _config(thread_id: str) -> RunnableConfig:
    # no run id: an import is no run, so its writes are not fenced by one (as a branch switch)
    return {"configurable": {"thread_id": thread_id}}


class LangGraphCopies(ThreadCopies):
    def __init__(self, threads: LangGraphThreads, saver: Saver, worker: Worker) -> None:
        self.threads = threads
        self.saver = saver  # the threads' own: stores an import's branches at once
        self.worker = worker  # builds an import's messages off the event loop

    async def read(self, thread_id: str) -> tuple[tuple[BranchCopy, ...], int]:
        saver = self.saver
        latest = (await self.threads.get_thread(thread_id)).messages
        stored = await saver.branches(thread_id)
        if not stored:
            return (BranchCopy(1, None, 0, latest),), 1
        out: list[BranchCopy] = []
        for b in stored:
            full: Sequence[Message] = latest
            if not b.active:
                found = await saver.branch_content(thread_id, b.number)
                fields = found.messages if found else ()
                full = [m for m in (from_fields(dict(f)) for f in fields) if m is not None]
            out.append(BranchCopy(b.number, b.parent, b.fork, tuple(full[b.fork :])))
        return tuple(out), next((b.number for b in stored if b.active), 1)

    async def write(self, thread_id: str, branches: Sequence[BranchCopy], active: int) -> None:
        if len(branches) > 1 and not self.saver.keeps_branches:
            raise NotSupported("This storage keeps no branches: only a conversation with one branch can be imported")
        # the branches share their prefixes in storage as forks do: the left ones as deltas,
        # the active one as the head
        own, head = await self.worker.run(_built, branches, active)
        if len(branches) > 1:
            shapes = [Branch(b.number, b.parent, b.fork, b.fork + len(b.messages), b.number == active) for b in branches]
            await self.saver.import_branches(thread_id, shapes, own)
        elif not head:
            return  # an empty conversation: no checkpoint at all, as a new one
        # the head in steps of HEAD_STEP messages: each step's write (encoding, rows, index)
        # is short, so the chats beside a long import keep their share of the process
        for start in range(0, len(head), HEAD_STEP):
            await self.threads.graph.aupdate_state(
                _config(thread_id), {"messages": head[start : start + HEAD_STEP]}, as_node="agent"
            )
        await self._settle(thread_id)

    async def _settle(self, thread_id: str) -> None:
        """A head whose last message asks for tools would run them on a resume: an import
        never does anything, so its pending step is dropped (the calls stay unanswered)."""
        head = await self.threads.saver.head(thread_id)
        if head is not None and head.next:
            await self.threads.graph.aupdate_state(_config(thread_id), None, as_node=END)
