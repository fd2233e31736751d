"""SaverPort on LangGraph's InMemorySaver, for tests: every answer computed from the
stored checkpoints themselves (no log, no branches, no search index)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver

from adapters.langchain.messages import to_domain
from adapters.langgraph.graph import INPUT_TASK, RUN_KEY
from adapters.langgraph.rows import next_nodes
from adapters.langgraph.saver import Saver
from domain.branches import Branch
from domain.errors import NotSupported
from domain.model import CheckpointSummary
from ports.saver import BranchContent, MessageFields, StoredHead


def _config(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def _messages(saved: CheckpointTuple) -> list[Any]:
    return list(saved.checkpoint["channel_values"].get("messages") or [])


class InMemoryThreadSaver(InMemorySaver, Saver):
    keeps_branches = False

    async def head(self, thread_id: str) -> StoredHead | None:
        saved = await self.aget_tuple(_config(thread_id))
        if saved is None:
            return None
        writes = saved.pending_writes or []
        pending = sum(1 for w in writes if w[0] == INPUT_TASK and w[1] == "messages")
        run_id = saved.metadata.get(RUN_KEY) if saved.metadata else None
        return StoredHead(saved.checkpoint["id"], tuple(next_nodes(saved.checkpoint)), len(_messages(saved)),
                          str(run_id) if run_id else None, len(writes), pending)

    async def history(self, thread_id: str) -> Sequence[CheckpointSummary]:
        out: list[CheckpointSummary] = []
        async for saved in self.alist(_config(thread_id)):
            messages = _messages(saved)
            meta: dict[str, Any] = dict(saved.metadata or {})
            out.append(CheckpointSummary(
                checkpoint_id=saved.checkpoint["id"],
                created_at=saved.checkpoint["ts"],
                step=int(meta.get("step", -1)),
                source=str(meta.get("source", "")),
                next=tuple(next_nodes(saved.checkpoint)),
                message_count=len(messages),
                last_message=to_domain(messages[-1]) if messages else None,
                run_id=str(meta[RUN_KEY]) if meta.get(RUN_KEY) else None,
            ))
        out.reverse()
        return out

    async def message_fields(self, thread_id: str, checkpoint_id: str) -> Sequence[MessageFields] | None:
        return None  # the objects themselves are stored: read through the graph

    async def written_count(self, thread_id: str, run_id: str) -> int | None:
        return None

    async def branches(self, thread_id: str) -> Sequence[Branch]:
        return []

    async def branch_content(self, thread_id: str, number: int) -> BranchContent | None:
        raise NotSupported("This checkpoint store does not keep branches")

    async def reindex(self) -> int:
        return 0
