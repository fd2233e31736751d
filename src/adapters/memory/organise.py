"""Titles, pins, the archive, temporary chats and turn counts in memory (ports.runs), behind
the run store's lock."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from domain.model import Conversation, Run, RunStatus, TitleSource
from domain.organise import Organise


class InMemoryOrganising:
    _lock: threading.Lock
    _conversations: dict[str, Conversation]
    _runs: dict[str, Run]

    def _organise_init(self) -> None:
        self._left: set[str] = set()  # temporary conversations their page left

    def _forget_organising(self, conversation_id: str) -> None:
        self._left.discard(conversation_id)

    def _change(self, conversation_id: str, **fields: object) -> bool:
        conv = self._conversations.get(conversation_id)
        if conv is None:
            return False
        self._conversations[conversation_id] = replace(conv, **fields)  # type: ignore[arg-type]
        return True

    async def retitle(self, conversation_id: str, title: str, source: TitleSource) -> bool:
        with self._lock:
            conv = self._conversations.get(conversation_id)
            if conv is None or conv.title_by is not TitleSource.MESSAGE:
                return False
            return self._change(conversation_id, title=title, title_by=source)

    async def organise(self, conversation_id: str, change: Organise) -> bool:
        with self._lock:
            conv = self._conversations.get(conversation_id)
            if conv is None:
                return False
            pinned = conv.pinned if change.pinned is None else change.pinned
            archived = conv.archived if change.archived is None else change.archived
            return self._change(conversation_id, pinned=pinned, archived=archived)

    async def set_turns(self, conversation_id: str, turns: int) -> bool:
        with self._lock:
            return self._change(conversation_id, turns=turns)

    async def leave_temporary(self, conversation_id: str) -> bool:
        with self._lock:
            conv = self._conversations.get(conversation_id)
            if conv is None or not conv.temporary:
                return False
            self._left.add(conversation_id)
            return True

    async def abandoned(self, idle_since: datetime) -> Sequence[str]:
        with self._lock:
            running = {r.conversation_id for r in self._runs.values() if r.status is RunStatus.RUNNING}
            return [
                c.id
                for c in self._conversations.values()
                if c.temporary and c.id not in running and (c.id in self._left or c.updated_at < idle_since)
            ]

    async def temporary_among(self, conversation_ids: Sequence[str]) -> set[str]:
        with self._lock:
            return {cid for cid in conversation_ids if (c := self._conversations.get(cid)) is not None and c.temporary}
