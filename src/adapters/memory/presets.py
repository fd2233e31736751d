"""PresetStore in memory: plain dicts behind a lock, gone when the process exits."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from domain.presets import DEFAULT_NAME, Preset
from ports.presets import PresetStore


class InMemoryPresetStore(PresetStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._presets: dict[str, dict[str, Preset]] = {}  # owner -> name -> preset

    async def presets(self, owner: str) -> Sequence[Preset]:
        with self._lock:
            mine = self._presets.get(owner, {})
            return [mine[name] for name in sorted(mine)]  # "" (the default) sorts first

    async def put_preset(self, owner: str, preset: Preset, limit: int) -> bool:
        with self._lock:
            mine = self._presets.setdefault(owner, {})
            named = sum(1 for name in mine if name != DEFAULT_NAME)
            if preset.name not in mine and preset.name != DEFAULT_NAME and named >= limit:
                return False
            mine[preset.name] = preset
            return True

    async def delete_preset(self, owner: str, name: str) -> bool:
        with self._lock:
            return self._presets.get(owner, {}).pop(name, None) is not None
