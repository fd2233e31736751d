"""What the LangGraph API keeps beside a conversation, in memory: its thread metadata and
each run's kwargs, as JSON text behind the run store's lock (a caller's later change to
what it passed never shows), gone with the conversation."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from domain.model import Conversation


class InMemoryMetadata:
    _lock: threading.Lock
    _conversations: dict[str, Conversation]

    def _metadata_init(self) -> None:
        self._metadata: dict[str, str] = {}  # conversation -> JSON
        self._run_kwargs: dict[str, tuple[str, str]] = {}  # run -> (conversation, JSON)

    def _forget_metadata(self, conversation_id: str) -> None:
        self._metadata.pop(conversation_id, None)
        for rid in [r for r, (cid, _) in self._run_kwargs.items() if cid == conversation_id]:
            del self._run_kwargs[rid]

    async def thread_metadata(self, conversation_ids: Sequence[str]) -> Mapping[str, Mapping[str, Any]]:
        with self._lock:
            return {cid: json.loads(self._metadata[cid]) for cid in conversation_ids if cid in self._metadata}

    async def merge_thread_metadata(self, conversation_id: str, metadata: Mapping[str, Any]) -> bool:
        with self._lock:
            if conversation_id not in self._conversations:
                return False
            merged = {**json.loads(self._metadata.get(conversation_id, "{}")), **metadata}
            self._metadata[conversation_id] = json.dumps(merged)
            return True

    def _owned(self, conversation_id: str, owner: str | None) -> bool:
        conv = self._conversations.get(conversation_id)
        return conv is not None and (owner is None or conv.owner == owner)

    async def run_kwargs(self, conversation_id: str, run_id: str, owner: str | None = None) -> Mapping[str, Any] | None:
        with self._lock:
            found = self._run_kwargs.get(run_id)
            ok = found is not None and found[0] == conversation_id and self._owned(conversation_id, owner)
            return json.loads(found[1]) if found is not None and ok else None

    async def set_run_kwargs(
        self, conversation_id: str, run_id: str, kwargs: Mapping[str, Any], owner: str | None = None
    ) -> bool:
        with self._lock:
            if not self._owned(conversation_id, owner):
                return False
            self._run_kwargs[run_id] = (conversation_id, json.dumps(kwargs))
            return True
