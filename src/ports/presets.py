"""PresetStore: each user's saved chat settings (their default and named presets)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Protocol

from domain.presets import Preset


class PresetStore(Protocol):
    """Presets are per user (`owner`, a user id) and named; a name is unique per user and
    compared exactly. The user's default is the preset named `domain.presets.DEFAULT_NAME`.
    Every method takes effect for all processes sharing the store as soon as it returns."""

    @abstractmethod
    async def presets(self, owner: str) -> Sequence[Preset]:
        """The user's presets, the default first, then by name (code point order); empty
        when they have none. Only reads."""

    @abstractmethod
    async def put_preset(self, owner: str, preset: Preset, limit: int) -> bool:
        """Store `preset`, replacing the user's preset of that name. A new name other than
        the default is refused (False, nothing stored) when the user has `limit` named
        presets already; the check and the write are one transaction."""

    @abstractmethod
    async def delete_preset(self, owner: str, name: str) -> bool:
        """Delete the user's preset `name`; False when they have none of that name."""
