"""The saver the engine runs on: a LangGraph checkpoint saver that also answers SaverPort's
reads (ports.saver). adapters.sqlite, adapters.postgres and adapters.memory each provide one;
naming this as a base class lets mypy check that each implements the whole port."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint

from adapters.langgraph.files import FileStage
from adapters.langgraph.latest import LatestCheckpoints
from adapters.langgraph.serde import MessageMemoSerializer
from adapters.storage import message_refs
from domain.attachments import Upload
from domain.branches import Branch
from ports.saver import SaverPort


class Saver(BaseCheckpointSaver[Any], SaverPort):
    keeps_branches = True
    _file_stage: FileStage | None = None

    @property
    def file_stage(self) -> FileStage:
        """The files waiting for their message's write (made on first use: the savers'
        own constructors are LangGraph's)."""
        if self._file_stage is None:
            self._file_stage = FileStage()
        return self._file_stage

    def stage_files(self, thread_id: str, uploads: Sequence[Upload]) -> None:
        self.file_stage.stage(thread_id, uploads)

    def unstage_files(self, thread_id: str) -> None:
        self.file_stage.drop(thread_id)

    @abstractmethod
    async def import_branches(self, thread_id: str, branches: Sequence[Branch], own: Mapping[int, Sequence[BaseMessage]]) -> None:
        """Store the branches of a thread being imported, in one transaction, before its
        first checkpoint (which then heads the active one): a row per branch (`branches`,
        normalised, one active), each left branch holding its own messages (`own`, from its
        fork on) with nothing left to run (adapters.langgraph.branching). The staged files
        their messages carry are stored with them. Raises NotSupported where the saver keeps
        no branches, before writing anything."""


class MessagesOnce:
    """What the SQLite and PostgreSQL savers share to store each message once: the plan of
    a checkpoint's message rows against the latest checkpoint this process wrote."""

    codec: MessageMemoSerializer
    latest: LatestCheckpoints

    def _plan(self, thread_id: str, ns: str, checkpoint: Checkpoint) -> message_refs.Plan | None:
        """The main graph's messages are stored apart, each once (adapters.storage.message_refs)."""
        if ns:
            return None
        base = self.latest.get(thread_id, ns)
        return message_refs.plan(
            checkpoint["channel_values"].get("messages"),
            base.checkpoint["id"] if base else None,
            base.messages if base else (),
            base.refs if base else None,
            self.codec.message_rows,
        )
