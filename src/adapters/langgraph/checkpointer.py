"""LangGraph's official SqliteSaver, usable from async graphs.

SqliteSaver only implements the sync methods; AsyncSqliteSaver (aiosqlite) measured 1.4x
slower per turn (shared/notes/baseline.md). The async methods here run the sync ones in a
worker thread: the event loop never blocks on a commit or on the busy timeout.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.sqlite import SqliteSaver

from adapters.sqlite.database import connect
from domain.errors import StorageFailure


async def _write(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a write in a worker thread; a database that cannot be written (disk full,
    read-only, I/O error) becomes StorageFailure, so the run fails with a clear code."""
    try:
        return await asyncio.to_thread(fn, *args)
    except sqlite3.Error as e:
        raise StorageFailure(f"The database could not be written: {e}") from e


class ThreadedSqliteSaver(SqliteSaver):
    @classmethod
    def open(cls, path: str) -> ThreadedSqliteSaver:
        conn = connect(path)
        # SqliteSaver manages its own transactions (commit after each cursor)
        conn.isolation_level = ""
        saver = cls(conn)
        saver.setup()
        return saver

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        items = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in items:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await _write(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await _write(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)
