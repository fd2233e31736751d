"""ThreadCopies over the graph and its saver: a thread read branch by branch, and written
as the engine writes branches (a fork, a switch), so the saver stores it as its own."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from uuid import uuid4

from langchain_core.messages import BaseMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from adapters.langchain.messages import from_fields, to_langchain
from adapters.langgraph.branching import with_op
from adapters.langgraph.engine import LangGraphThreads
from domain.errors import NotSupported
from domain.model import Message
from domain.transfer import BranchCopy
from ports.copies import ThreadCopies


def _config(thread_id: str) -> RunnableConfig:
    # no run id: an import is no run, so its writes are not fenced by one (as a branch switch)
    return {"configurable": {"thread_id": thread_id}}


class LangGraphCopies(ThreadCopies):
    def __init__(self, threads: LangGraphThreads) -> None:
        self.threads = threads

    async def read(self, thread_id: str) -> tuple[tuple[BranchCopy, ...], int]:
        saver = self.threads.saver
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
            out.append(BranchCopy(b.number, b.parent, b.fork, tuple(full[b.fork:])))
        return tuple(out), next((b.number for b in stored if b.active), 1)

    async def write(self, thread_id: str, branches: Sequence[BranchCopy], active: int) -> None:
        if len(branches) > 1 and not self.threads.saver.keeps_branches:
            raise NotSupported("This storage keeps no branches: only a conversation with one branch can be imported")
        graph = self.threads.graph
        config = _config(thread_id)
        # each message built once, with an id of its own: a branch shares its parent's objects
        full: dict[int, list[BaseMessage]] = {}
        for b in branches:
            prefix = full[b.parent][: b.fork] if b.parent is not None else []
            full[b.number] = prefix + [to_langchain(replace(m, id=str(uuid4()))) for m in b.messages]
        if not full[1]:
            return  # an empty conversation: no checkpoint at all, as a new one
        await graph.aupdate_state(config, {"messages": full[1]}, as_node="agent")
        await self._settle(thread_id)
        current = 1
        for b in branches[1:]:
            if b.parent is not None and b.parent != current:
                await self.threads.switch_branch(thread_id, b.parent)
            # the saver records the branch (number, normalised parent) in the checkpoint's transaction
            op = {"op": "fork", "at": b.fork, "next": []}
            update = {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *full[b.number]]}
            await graph.aupdate_state(with_op(config, op), update, as_node="agent")
            await self._settle(thread_id)
            current = b.number
        if active != current:
            await self.threads.switch_branch(thread_id, active)
            await self._settle(thread_id)

    async def _settle(self, thread_id: str) -> None:
        """A head whose last message asks for tools would run them on a resume: an import
        never does anything, so its pending step is dropped (the calls stay unanswered)."""
        head = await self.threads.saver.head(thread_id)
        if head is not None and head.next:
            await self.threads.graph.aupdate_state(_config(thread_id), None, as_node=END)
