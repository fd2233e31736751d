"""LangGraph's official SqliteSaver, made usable from async graphs, with linear storage.
The saver's I/O (its thread, transactions, fencing, memory); the SQL of its tables is
adapters.sqlite.checkpoint_rows.

- Async: SqliteSaver only implements the sync methods; AsyncSqliteSaver (aiosqlite) was
  1.4x slower per turn (shared/notes/baseline.md). The async methods here run the sync ones
  on the saver's own thread, so the event loop never waits on a commit or on the busy
  timeout, and a write stuck behind another process's lock holds no shared worker.
- Fencing: a write made for a run (its id is in the config) checks, in the same
  transaction, that the run is still `running` in the `runs` table; a process that lost
  its run (paused past its lease, taken over) gets RunLost and writes nothing.
- Linear storage: SqliteSaver stores every channel value in every checkpoint, so a thread
  grows with the square of its length. Each `put` also writes a one-line summary of the
  checkpoint to `checkpoint_log` (what the JSONL export shows) and, in the same transaction,
  deletes the thread's checkpoints older than the last `keep` with their writes. A resume
  only ever needs the latest checkpoint and its pending writes. Each message of the main
  graph is stored once, in its own row, and a checkpoint holds their digests
  (adapters.sqlite.message_rows): a turn writes what it adds, not the thread again.
- Fewer fsyncs, same promises: the file's connections are synchronous=FULL, and a commit is
  synced only where something outside depends on it: a new message (what POST acknowledges:
  the `source: input` checkpoint of a thread's first, the pending input of the others, see
  adapters.langgraph.engine) and a tool call's result (the call took effect).
  Other steps commit with synchronous=NORMAL; WAL frames are ordered, so the next synced
  commit on the file (the next such checkpoint, a tool-call journal entry, the run's outcome)
  makes them durable too. A process crash loses nothing either way (the OS has the pages);
  only a power cut between two synced commits can lose the steps since the last one, which is
  a crash one step earlier: the resume starts from there.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager, nullcontext
from functools import partial
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.utils import load_pending_writes, pending_writes_sql

from adapters.langgraph import branching
from adapters.langgraph.keys import INPUT_TASK, KEEP_ALL_KEY, RUN_KEY
from adapters.langgraph.latest import LatestCheckpoints
from adapters.langgraph.rows import plain_messages, summary_row
from adapters.langgraph.saver import MessagesOnce, Saver
from adapters.langgraph.serde import MessageMemoSerializer
from adapters.sqlite import branches, checkpoint_rows, file_rows, message_rows
from adapters.sqlite.branch_schema import CHECKPOINT_LOG as LOG_TABLE
from adapters.sqlite.database import (
    BUSY_TIMEOUT_MS,
    FileIdentity,
    connect,
    failure_reason,
    migrate,
    storage_failure,
    unsynced,
    within,
)
from adapters.sqlite.maintenance import prune_thread
from adapters.sqlite.message_rows import read_plain
from adapters.sqlite.search import forget_thread
from adapters.sqlite.search_sync import index_checkpoint, index_input, index_missing, rebuild
from adapters.sqlite.threads import SerialThread, release, writer_thread
from adapters.storage import message_refs
from adapters.storage.checkpoint_log import head_from_row, summary_from_row
from domain.attachments import StoredFile, Upload
from domain.branches import Branch
from domain.errors import StorageFailure
from domain.model import CheckpointSummary, iso, utc_now
from ports.metrics import NO_METRICS, MetricsPort
from ports.saver import BranchContent, MessageFields, StoredHead

log = logging.getLogger(__name__)


def _has_tool_result(value: Any) -> bool:
    """A write carrying a tool call's result: the call took effect, keep it at once."""
    items = value if isinstance(value, list) else [value]
    return any(isinstance(item, ToolMessage) for item in items)


STORAGE_MESSAGE = "The database could not be read or written (disk full, read-only, locked or I/O error)"


class ThreadedSqliteSaver(SqliteSaver, Saver, MessagesOnce):
    def __init__(
        self, conn: sqlite3.Connection, keep: int = 3, metrics: MetricsPort = NO_METRICS, path: str | None = None
    ) -> None:
        self.codec = MessageMemoSerializer()
        super().__init__(conn, serde=self.codec)
        self.lock = threading.RLock()  # type: ignore[assignment]  # a read resolves its messages under it
        self.keep = keep  # checkpoints kept per thread; 0 keeps all (plain SqliteSaver)
        self.metrics = metrics
        # with the file's path: on the file's one writer thread (adapters.sqlite.threads)
        self._path = path
        self._executor = writer_thread(path) if path else SerialThread("sophos-saver")
        self.latest = LatestCheckpoints()
        self.file: FileIdentity | None = None  # checked before every write
        self.busy_timeout = BUSY_TIMEOUT_MS / 1000

    @classmethod
    def open(
        cls, path: str, keep: int = 3, metrics: MetricsPort = NO_METRICS, busy_timeout: float = BUSY_TIMEOUT_MS / 1000
    ) -> ThreadedSqliteSaver:
        try:
            conn = connect(path, busy_timeout)
            conn.isolation_level = "DEFERRED"  # SqliteSaver commits after each cursor
            saver = cls(conn, keep=keep, metrics=metrics, path=path)
            saver.busy_timeout = busy_timeout
            saver.setup()
            saver.file = FileIdentity(path)  # the file exists now
        except sqlite3.Error as e:
            raise storage_failure(e) from e
        return saver

    def setup(self) -> None:
        if self.is_setup:
            return
        super().setup()
        self.conn.execute(LOG_TABLE)
        self.conn.commit()
        migrate(self.conn)  # the search index's tables, which `put` writes
        index_missing(self.conn)

    def close(self) -> None:
        with self.lock:
            self.conn.close()
        if self._path:
            release(self._path, self._executor, wait=False)
        else:
            self._executor.shutdown(wait=False)

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a sync method on the saver's thread; a database that cannot be read or
        written becomes StorageFailure, so the run fails with a clear code."""
        try:
            deadline = time.monotonic() + self.busy_timeout  # one busy wait, counted from here
            return await self._executor.run(within, self.conn, deadline, self.busy_timeout, partial(fn, *args))
        except (sqlite3.Error, message_refs.DanglingMessage) as e:
            log.warning("checkpoint store: %s", e)
            self.metrics.storage_failure(failure_reason(e))
            if isinstance(e, sqlite3.Error) and failure_reason(e) == "busy":
                raise storage_failure(e) from e  # says so: another process holds the lock
            raise StorageFailure(STORAGE_MESSAGE) from e

    @contextmanager
    def _transaction(self, config: RunnableConfig, synced: bool = True) -> Iterator[sqlite3.Cursor]:
        """BEGIN IMMEDIATE … COMMIT, fenced: a write for a run that is no longer running
        raises RunLost and is rolled back. `synced` False: commit without an fsync (see the
        module docstring)."""
        with self.lock, nullcontext() if synced else unsynced(self.conn):
            self.setup()
            if self.file is not None:
                self.file.check()
            cur = self.conn.cursor()
            try:
                cur.execute("BEGIN IMMEDIATE")
                run_id = config["configurable"].get(RUN_KEY)
                if run_id is not None:
                    checkpoint_rows.fence(cur, run_id)
                yield cur
                self.conn.commit()
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.rollback()
                raise
            finally:
                cur.close()

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        configurable = config["configurable"]
        thread_id, ns = str(configurable["thread_id"]), str(configurable.get("checkpoint_ns", ""))
        full_metadata = get_checkpoint_metadata(config, metadata)
        planned = self._plan(thread_id, ns, checkpoint)
        type_, blob = self.codec.dumps_with_refs(checkpoint, planned.refs) if planned else self.serde.dumps_typed(checkpoint)
        refs = planned.refs if planned else None
        written = 0  # bytes of new message rows
        meta_blob = json.dumps(full_metadata, ensure_ascii=False).encode("utf-8", "ignore")
        key = (thread_id, ns, checkpoint["id"])
        op = branching.op_of(config) if not ns else None
        # a new message, a new branch, a switch: acknowledged to the user once committed
        synced = full_metadata.get("source") == "input" or op is not None
        summary = summary_row(checkpoint, full_metadata)
        files = self.file_stage.taken(thread_id, checkpoint["channel_values"].values()) if not ns else []
        with self._transaction(config, synced) as cur:  # one transaction: fence, branch, checkpoint, summary, pruning
            written += file_rows.store(cur, thread_id, files)  # the files of a message it stores first
            if op is not None:
                branches.apply(cur, thread_id, op, dict(checkpoint), summary[4])
            branch = branches.active_number(cur, thread_id) if not ns else None
            keep = 0 if configurable.get(KEEP_ALL_KEY) else self.keep
            if keep > 1:
                # pruned before the insert, so the new blob reuses the pages the oldest one
                # frees: pruned after, a thread's file kept a whole checkpoint's worth of free pages
                prune_thread(cur, thread_id, ns, keep - 1, refs)
            if planned is not None:
                written += message_rows.store(cur, thread_id, ns, planned)
            checkpoint_rows.insert_checkpoint(
                cur, key, configurable.get("checkpoint_id"), type_, blob, meta_blob, summary, branch
            )
            if not ns:
                index_checkpoint(cur, thread_id, checkpoint)
            if keep == 1:
                prune_thread(cur, thread_id, ns, keep, refs)
        self.file_stage.stored(thread_id, files)
        self.metrics.checkpoint_written("checkpoint", len(blob) + len(meta_blob) + written)
        self.latest.remember(thread_id, ns, checkpoint, meta_blob, configurable.get("checkpoint_id"), refs)
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    async def written_count(self, thread_id: str, run_id: str) -> int | None:
        return self.written_now(thread_id, run_id)

    def written_now(self, thread_id: str, run_id: str) -> int | None:
        """The message count of the latest checkpoint this saver wrote for the thread, if
        the run `run_id` wrote it; else None (ask the file). Writes are fenced by the run,
        so while the run is this process's, nobody else writes the thread."""
        latest = self.latest.get(thread_id, "")
        if latest is None or json.loads(latest.metadata).get(RUN_KEY) != run_id:
            return None
        return len(latest.checkpoint["channel_values"].get("messages") or ())

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        # as SqliteSaver.put_writes, in one fenced transaction
        configurable = config["configurable"]
        rows = checkpoint_rows.write_rows(configurable, writes, task_id, task_path, self.serde.dumps_typed)
        # a new message (pending input) or a tool call's result: kept at once
        synced = task_id == INPUT_TASK or any(_has_tool_result(value) for _, value in writes)
        thread_id = str(configurable["thread_id"])
        files = self.file_stage.taken(thread_id, [value for _, value in writes]) if not configurable["checkpoint_ns"] else []
        with self._transaction(config, synced) as cur:
            file_rows.store(cur, thread_id, files)  # a new message's files, with it
            if task_id == INPUT_TASK and not configurable["checkpoint_ns"]:
                index_input(cur, thread_id, writes)
            checkpoint_rows.insert_writes(cur, writes, rows)
        self.file_stage.stored(thread_id, files)
        self.metrics.checkpoint_written("writes", sum(len(row[-1]) for row in rows))

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        if get_checkpoint_id(config) is None:
            hit = self._latest_tuple(str(config["configurable"]["thread_id"]), config["configurable"].get("checkpoint_ns", ""))
            if hit is not None:
                return hit
        with self._reading():
            found = super().get_tuple(config)
            return self._resolved(found) if found else None

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """One read transaction: a checkpoint and the message rows it refers to."""
        with self.lock:
            self.setup()
            self.conn.execute("BEGIN")
            try:
                yield
            finally:
                self.conn.rollback()

    def _resolved(self, found: CheckpointTuple) -> CheckpointTuple:
        """Its messages read back from their rows (in the read transaction that read it)."""
        configurable = found.config["configurable"]
        thread_id, ns = str(configurable["thread_id"]), str(configurable.get("checkpoint_ns", ""))

        def load(refs: bytes) -> list[Any]:
            with closing(self.conn.cursor()) as cur:
                return self.codec.load_messages(refs, message_rows.stored_rows(cur, thread_id, ns))

        message_refs.resolve(found.checkpoint["channel_values"], load)
        return found

    def _latest_tuple(self, thread_id: str, ns: str) -> CheckpointTuple | None:
        """The thread's latest checkpoint from memory (see adapters.langgraph.latest), if it
        is still the latest in the database."""
        cached = self.latest.get(thread_id, ns)
        if cached is None:
            return None
        with self.cursor(transaction=False) as cur:
            latest = checkpoint_rows.latest_id(cur, thread_id, ns)
            if latest != cached.checkpoint["id"]:
                return None
            cur.execute(pending_writes_sql(self._has_task_path), (thread_id, ns, latest))
            writes = load_pending_writes(cur, self.serde)
        return cached.tuple(thread_id, ns, writes)

    async def head(self, thread_id: str) -> StoredHead | None:
        return head_from_row(await self.call(self._head_row, thread_id))

    def _head_row(self, thread_id: str) -> tuple[Any, ...] | None:
        with self.cursor(transaction=False) as cur:
            return checkpoint_rows.head_row(cur, thread_id)

    async def message_fields(self, thread_id: str, checkpoint_id: str) -> Sequence[MessageFields] | None:
        return await self.call(self.latest_message_fields, thread_id, checkpoint_id)  # type: ignore[no-any-return]

    def latest_message_fields(self, thread_id: str, checkpoint_id: str) -> Sequence[MessageFields] | None:
        """The messages of a checkpoint as plain field dicts, decoded without building
        LangChain objects (5x faster on a long thread). None if it is not msgpack."""
        with self._reading(), self.cursor(transaction=False) as cur:
            row = checkpoint_rows.checkpoint_blob(cur, thread_id, checkpoint_id)
            checkpoint = read_plain(cur, thread_id, row[0], row[1]) if row else None
        return None if checkpoint is None else plain_messages(checkpoint)

    async def history(self, thread_id: str) -> list[CheckpointSummary]:
        return [summary_from_row(row) for row in await self.call(self._history, thread_id)]

    def _history(self, thread_id: str) -> list[tuple[Any, ...]]:
        with self.cursor(transaction=False) as cur:
            return checkpoint_rows.history_rows(cur, thread_id)

    def delete_thread(self, thread_id: str) -> None:
        self.latest.forget(str(thread_id))
        with self.cursor() as cur:
            for table in ("checkpoints", "writes", "checkpoint_log", "checkpoint_messages"):
                cur.execute(f"DELETE FROM {table} WHERE thread_id = ?", (str(thread_id),))
            forget_thread(cur, str(thread_id))
            file_rows.forget(cur, str(thread_id))
            cur.execute("DELETE FROM branches WHERE conversation_id = ?", (str(thread_id),))

    async def release_files(self, thread_id: str, digests: Sequence[str]) -> None:
        if digests:
            await self.call(self._release_files, thread_id, list(digests))

    def _release_files(self, thread_id: str, digests: list[str]) -> None:
        with self.cursor() as cur:
            file_rows.forget(cur, thread_id, digests)

    async def files(self, thread_id: str, digests: Sequence[str]) -> dict[str, StoredFile]:
        return await self.call(self._files, thread_id, list(digests))  # type: ignore[no-any-return]

    def _files(self, thread_id: str, digests: list[str]) -> dict[str, StoredFile]:
        with self.cursor(transaction=False) as cur:
            return file_rows.read(cur, thread_id, digests)

    async def branches(self, thread_id: str) -> list[Branch]:
        return await self.call(self._branches, thread_id)  # type: ignore[no-any-return]

    def _branches(self, thread_id: str) -> list[Branch]:
        with self.cursor(transaction=False) as cur:
            return branches.load(cur, thread_id)

    async def branch_content(self, thread_id: str, number: int) -> BranchContent | None:
        return await self.call(self._branch_content, thread_id, number)  # type: ignore[no-any-return]

    def _branch_content(self, thread_id: str, number: int) -> BranchContent | None:
        """Rebuilt from the deltas and the latest checkpoint, in one read transaction."""
        with self._reading(), self.cursor(transaction=False) as cur:
            rows = branches.load(cur, thread_id)
            if number not in {b.number for b in rows}:
                return None
            head = cur.execute(branches.LATEST, (thread_id,)).fetchone()
            latest = branches.fields_of(cur, thread_id, head)
            content = branching.branch_content(rows, branches.deltas(cur, thread_id), number, latest)
            return BranchContent(tuple(content), tuple(branches.stashed_next(cur, thread_id, number)))

    async def import_branches(self, thread_id: str, branches: Sequence[Branch], own: Mapping[int, Sequence[BaseMessage]]) -> None:
        # encoded off the file's one writer thread (the import's heavy part), then one transaction on it
        rows = await asyncio.to_thread(branching.imported, branches, own, self.serde.dumps_typed, thread_id, iso(utc_now()))
        files = self.file_stage.taken(thread_id, [list(m) for m in own.values()])
        await self.call(self._insert_branches, thread_id, rows, files)
        self.file_stage.stored(thread_id, files)

    def _insert_branches(self, thread_id: str, rows: list[tuple[Any, ...]], files: list[Upload]) -> None:
        with self._transaction({"configurable": {"thread_id": thread_id}}) as cur:
            file_rows.store(cur, thread_id, files)
            branches.insert(cur, rows)

    async def reindex(self) -> int:
        return await self.call(self.reindex_now)  # type: ignore[no-any-return]

    def reindex_now(self) -> int:
        """Rebuild the search index from every thread's latest checkpoint (blocking)."""
        with self.lock:
            self.setup()
            return rebuild(self.conn)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self.call(self.get_tuple, config)  # type: ignore[no-any-return]

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        items = await self.call(lambda: list(self.list(config, filter=filter, before=before, limit=limit)))
        for item in items:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self.call(self.put, config, checkpoint, metadata, new_versions)  # type: ignore[no-any-return]

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self.call(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await self.call(self.delete_thread, thread_id)

    def list(  # last in the class: its name hides the builtin in the annotations after it
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        with self._reading():
            found = [self._resolved(t) for t in super().list(config, filter=filter, before=before, limit=limit)]
        yield from found
