"""The saver the engine runs on: a LangGraph checkpoint saver that also answers SaverPort's
reads (ports.saver). adapters.sqlite, adapters.postgres and adapters.memory each provide one;
naming this as a base class lets mypy check that each implements the whole port."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint

from adapters.langgraph.latest import LatestCheckpoints
from adapters.langgraph.serde import MessageMemoSerializer
from adapters.storage import message_refs
from ports.saver import SaverPort


class Saver(BaseCheckpointSaver[Any], SaverPort):
    keeps_branches = True


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
