"""A user's saved chat settings: their default (what a new conversation of theirs starts
with when it names nothing else) and named presets (a model with instructions, chosen in
one go). Both are ChatSettings; the default is kept as the preset named DEFAULT_NAME, a
name a person cannot give."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from domain.errors import InvalidInput
from domain.model import check_text
from domain.models import ChatSettings, check_model_name, check_system, check_system_mode

DEFAULT_NAME = ""  # the user's default, stored beside their presets
PRESET_NAME_MAX = 60  # characters
PRESETS_MAX = 50  # named presets per user (the default not counted)


@dataclass(frozen=True)
class Preset:
    """Settings saved by a user under a name (DEFAULT_NAME: their default)."""

    name: str
    settings: ChatSettings
    updated_at: datetime

    @property
    def is_default(self) -> bool:
        return self.name == DEFAULT_NAME


def check_preset_name(value: object) -> str:
    """A preset's name as a person gives it: 1 to PRESET_NAME_MAX visible characters, no
    control characters and no '/', spaces trimmed."""
    if not isinstance(value, str):
        raise InvalidInput("A preset name must be a string")
    name = " ".join(check_text(value, "A preset name").split())
    if not name:
        raise InvalidInput("A preset name must not be empty")
    if len(name) > PRESET_NAME_MAX:
        raise InvalidInput(f"A preset name is at most {PRESET_NAME_MAX} characters")
    if "/" in name or any(unicodedata.category(ch) in ("Cc", "Cf") for ch in name):
        raise InvalidInput("A preset name must not contain '/' or control characters")
    return name


def preset_settings(fields: Mapping[str, object]) -> ChatSettings:
    """The settings a request saves (`model`, `system`, `system_mode`; absent or null: the
    server's default), each checked as a conversation's are."""
    return ChatSettings(
        check_model_name(fields.get("model")), check_system(fields.get("system")), check_system_mode(fields.get("system_mode"))
    )
