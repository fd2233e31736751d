"""Each user's saved chat settings: their default (what a new conversation of theirs starts
with, for the fields its first message does not name) and named presets (domain.presets)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from domain.audit import Action
from domain.errors import PresetNotFound, TooManyPresets
from domain.model import utc_now
from domain.models import ChatSettings
from domain.presets import DEFAULT_NAME, PRESETS_MAX, Preset, check_preset_name, preset_settings
from domain.principals import LOCAL, Principal
from ports.presets import PresetStore
from services.audit import NO_AUDIT, AuditTrail
from services.models import ModelCatalog


@dataclass(frozen=True)
class SavedSettings:
    """A user's default (None: the server's) and named presets, by name."""

    default: Preset | None
    presets: Sequence[Preset]


class PresetService:
    def __init__(
        self,
        store: PresetStore,
        catalog: Callable[[], ModelCatalog] | None = None,
        clock: Callable[[], datetime] = utc_now,
        limit: int = PRESETS_MAX,
        audit: AuditTrail = NO_AUDIT,
    ) -> None:
        self.audit = audit  # saved and deleted presets: settings changed through the API
        self.store = store
        self.catalog = catalog  # a getter: listing presets never builds a model client
        self.clock = clock
        self.limit = limit

    async def saved(self, *, by: Principal = LOCAL) -> SavedSettings:
        every = await self.store.presets(by.user_id)
        default = next((p for p in every if p.is_default), None)
        return SavedSettings(default, [p for p in every if not p.is_default])

    async def defaults_for(self, user_id: str) -> ChatSettings:
        """What a new conversation of the user starts with (the server's default when they
        saved none)."""
        found = next((p for p in await self.store.presets(user_id) if p.is_default), None)
        return found.settings if found is not None else ChatSettings()

    async def save(self, name: object, fields: Mapping[str, object], *, by: Principal = LOCAL) -> Preset:
        """Save the preset `name` (a new name past PRESETS_MAX is refused); an unknown model
        is refused before anything is written."""
        preset = Preset(check_preset_name(name), preset_settings(fields), self.clock())
        await self._check(preset.settings)
        if not await self.store.put_preset(by.user_id, preset, self.limit):
            raise TooManyPresets(f"You have {self.limit} presets already: delete one first")
        await self.audit.record(Action.PRESET_SAVED, preset.name)
        return preset

    async def set_default(self, fields: Mapping[str, object], *, by: Principal = LOCAL) -> Preset:
        """Make these settings the user's default for their new conversations."""
        preset = Preset(DEFAULT_NAME, preset_settings(fields), self.clock())
        await self._check(preset.settings)
        await self.store.put_preset(by.user_id, preset, self.limit)
        await self.audit.record(Action.PRESET_SAVED, "(default)")
        return preset

    async def delete(self, name: object, *, by: Principal = LOCAL) -> None:
        if not await self.store.delete_preset(by.user_id, check_preset_name(name)):
            raise PresetNotFound()
        await self.audit.record(Action.PRESET_DELETED, str(name))

    async def clear_default(self, *, by: Principal = LOCAL) -> None:
        """Back to the server's default for new conversations (nothing to clear is fine)."""
        if await self.store.delete_preset(by.user_id, DEFAULT_NAME):
            await self.audit.record(Action.PRESET_DELETED, "(default)")

    async def _check(self, settings: ChatSettings) -> None:
        if settings.model is not None and self.catalog is not None:
            await self.catalog().check(settings.model)
