"""The latest checkpoint this process wrote for each recent thread, kept decoded.

LangGraph reads a thread's latest checkpoint at the start of every run, and decoding it
builds every message of the thread again (pydantic, ~20 µs each): the cost of a turn grew
with the thread. The saver keeps what it has just written, and serves it again only while
the database still says it is the thread's latest checkpoint (another process may have
written since), so a hit costs one indexed query and the pending writes.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    copy_checkpoint,
)


@dataclass(frozen=True)
class Latest:
    checkpoint: Checkpoint
    metadata: bytes  # as stored: every hit decodes its own copy
    parent_id: str | None
    # its messages as stored apart (adapters.sqlite.message_rows): the digests, and the
    # message objects they stand for, so the next checkpoint encodes only what it adds
    refs: bytes | None = None
    messages: tuple[Any, ...] = ()

    def tuple(self, thread_id: str, ns: str, writes: list[PendingWrite]) -> CheckpointTuple:
        def config(checkpoint_id: str) -> RunnableConfig:
            return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}

        metadata: CheckpointMetadata = json.loads(self.metadata)
        parent = config(self.parent_id) if self.parent_id else None
        # a copy: the graph updates a checkpoint's version maps in place
        return CheckpointTuple(config(self.checkpoint["id"]), copy_checkpoint(self.checkpoint), metadata, parent, writes)


class LatestCheckpoints:
    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, str], Latest] = OrderedDict()

    def remember(
        self, thread_id: str, ns: str, checkpoint: Checkpoint, metadata: bytes, parent_id: Any, refs: bytes | None = None
    ) -> None:
        key = (thread_id, ns)
        messages = tuple(checkpoint["channel_values"].get("messages") or ()) if refs is not None else ()
        self._items[key] = Latest(copy_checkpoint(checkpoint), metadata, str(parent_id) if parent_id else None, refs, messages)
        self._items.move_to_end(key)
        if len(self._items) > self.size:
            self._items.popitem(last=False)

    def get(self, thread_id: str, ns: str) -> Latest | None:
        return self._items.get((thread_id, ns))

    def forget(self, thread_id: str) -> None:
        for key in [k for k in self._items if k[0] == thread_id]:
            del self._items[key]
