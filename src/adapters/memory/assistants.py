"""AssistantStore in memory: dicts behind a lock, gone when the process exits."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from domain.assistants import Assistant, AssistantExists, AssistantPatch, TooManyAssistants
from ports.assistants import AssistantStore


def _sees(viewer: str | None, a: Assistant) -> bool:
    return viewer is None or a.owner is None or a.owner == viewer


class InMemoryAssistantStore(AssistantStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: dict[str, Assistant] = {}
        self._versions: dict[str, dict[int, Assistant]] = {}

    async def create(self, assistant: Assistant, limit: int) -> None:
        with self._lock:
            if assistant.assistant_id in self._latest:
                raise AssistantExists()
            owned = sum(1 for a in self._latest.values() if a.owner == assistant.owner)
            if assistant.owner is not None and owned >= limit:
                raise TooManyAssistants()
            self._latest[assistant.assistant_id] = assistant
            self._versions[assistant.assistant_id] = {assistant.version: assistant}

    def _owned(self, assistant_id: str, owner: str | None) -> Assistant | None:
        found = self._latest.get(assistant_id)
        return found if found is not None and found.owner == owner else None

    async def get(self, assistant_id: str, viewer: str | None) -> Assistant | None:
        with self._lock:
            found = self._latest.get(assistant_id)
            return found if found is not None and _sees(viewer, found) else None

    async def assistants(self, viewer: str | None, graph_ids: Sequence[str]) -> Sequence[Assistant]:
        with self._lock:
            return [a for a in self._latest.values() if _sees(viewer, a) and a.graph_id in graph_ids]

    async def update(
        self, assistant_id: str, owner: str | None, patch: AssistantPatch, now: datetime, limit: int
    ) -> Assistant | None:
        with self._lock:
            current = self._owned(assistant_id, owner)
            if current is None:
                return None
            versions = self._versions[assistant_id]
            if len(versions) >= limit:
                raise TooManyAssistants()
            new = patch.applied(current, max(versions) + 1, now)
            versions[new.version] = replace(new, created_at=now)
            self._latest[assistant_id] = new
            return new

    async def delete(self, assistant_id: str, owner: str | None) -> bool:
        with self._lock:
            if self._owned(assistant_id, owner) is None:
                return False
            del self._latest[assistant_id], self._versions[assistant_id]
            return True

    async def versions(self, assistant_id: str, viewer: str | None) -> Sequence[Assistant]:
        with self._lock:
            found = self._latest.get(assistant_id)
            if found is None or not _sees(viewer, found):
                return []
            return [
                replace(v, updated_at=v.created_at)
                for v in sorted(self._versions[assistant_id].values(), key=lambda v: -v.version)
            ]

    async def set_latest(self, assistant_id: str, owner: str | None, version: int, now: datetime) -> Assistant | None:
        with self._lock:
            current = self._owned(assistant_id, owner)
            chosen = self._versions.get(assistant_id, {}).get(version) if current is not None else None
            if current is None or chosen is None:
                return None
            latest = replace(chosen, created_at=current.created_at, updated_at=now)
            self._latest[assistant_id] = latest
            return latest
