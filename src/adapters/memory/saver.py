"""SaverPort on LangGraph's InMemorySaver, for tests: every answer computed from the
stored checkpoints themselves (no log, no branches, no search index)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver

from adapters.langchain.messages import to_domain
from adapters.langgraph.keys import INPUT_TASK, RUN_KEY
from adapters.langgraph.rows import next_nodes
from adapters.langgraph.saver import Saver
from domain.attachments import StoredFile, Upload
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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.file_blobs: dict[str, StoredFile] = {}  # digest -> the file, once
        self.file_refs: dict[str, set[str]] = {}  # thread id -> the digests it holds

    def _store_files(self, thread_id: str, files: Sequence[Upload]) -> None:
        for u in files:
            self.file_blobs.setdefault(u.attachment.digest, StoredFile(u.attachment.media_type, u.data, u.text))
            self.file_refs.setdefault(thread_id, set()).add(u.attachment.digest)
        self.file_stage.stored(thread_id, files)

    def put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> RunnableConfig:
        thread_id, ns = str(config["configurable"]["thread_id"]), config["configurable"].get("checkpoint_ns", "")
        files = self.file_stage.taken(thread_id, checkpoint["channel_values"].values()) if not ns else []
        out = super().put(config, checkpoint, metadata, new_versions)
        self._store_files(thread_id, files)
        return out

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = "") -> None:
        thread_id, ns = str(config["configurable"]["thread_id"]), config["configurable"].get("checkpoint_ns", "")
        files = self.file_stage.taken(thread_id, [v for _, v in writes]) if not ns else []
        super().put_writes(config, writes, task_id, task_path)
        self._store_files(thread_id, files)

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id)
        self._forget_files(str(thread_id), None)

    def _forget_files(self, thread_id: str, only: Sequence[str] | None) -> None:
        held = self.file_refs.get(thread_id, set())
        gone = set(held) if only is None else held & set(only)
        held -= gone
        if not held:
            self.file_refs.pop(thread_id, None)
        still = set().union(*self.file_refs.values()) if self.file_refs else set()
        for digest in gone - still:
            self.file_blobs.pop(digest, None)

    async def release_files(self, thread_id: str, digests: Sequence[str]) -> None:
        self._forget_files(thread_id, digests)

    async def files(self, thread_id: str, digests: Sequence[str]) -> dict[str, StoredFile]:
        held = self.file_refs.get(thread_id, set())
        return {d: self.file_blobs[d] for d in digests if d in held and d in self.file_blobs}

    async def head(self, thread_id: str) -> StoredHead | None:
        saved = await self.aget_tuple(_config(thread_id))
        if saved is None:
            return None
        writes = saved.pending_writes or []
        pending = sum(1 for w in writes if w[0] == INPUT_TASK and w[1] == "messages")
        run_id = saved.metadata.get(RUN_KEY) if saved.metadata else None
        return StoredHead(
            saved.checkpoint["id"],
            tuple(next_nodes(saved.checkpoint)),
            len(_messages(saved)),
            str(run_id) if run_id else None,
            len(writes),
            pending,
        )

    async def history(self, thread_id: str) -> Sequence[CheckpointSummary]:
        out: list[CheckpointSummary] = []
        async for saved in self.alist(_config(thread_id)):
            messages = _messages(saved)
            meta: dict[str, Any] = dict(saved.metadata or {})
            out.append(
                CheckpointSummary(
                    checkpoint_id=saved.checkpoint["id"],
                    created_at=saved.checkpoint["ts"],
                    step=int(meta.get("step", -1)),
                    source=str(meta.get("source", "")),
                    next=tuple(next_nodes(saved.checkpoint)),
                    message_count=len(messages),
                    last_message=to_domain(messages[-1]) if messages else None,
                    run_id=str(meta[RUN_KEY]) if meta.get(RUN_KEY) else None,
                )
            )
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

    async def import_branches(self, thread_id: str, branches: Sequence[Branch], own: Mapping[int, Sequence[BaseMessage]]) -> None:
        raise NotSupported("This checkpoint store does not keep branches")

    async def reindex(self) -> int:
        return 0
