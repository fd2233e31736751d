"""The model and system prompt a conversation asks for, and the rules on them.

A conversation may name a model and instructions of its own; None means the server's
default (OLLAMA_MODEL or OPENAI_MODEL, config/system.md), so changing the default moves
every conversation that never chose. Its instructions are added after the server's prompt
(which carries the tool guidance) unless it asks to replace that prompt (SystemMode). A
change applies from the conversation's next turn.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from domain.errors import InvalidInput, UnknownModel
from domain.model import Conversation, SystemMode, check_text

MODEL_NAME_MAX = 200  # characters: Ollama's longest names (registry/namespace/model:tag) are ~100
SYSTEM_MAX = 16_000  # characters of a conversation's own system prompt


@dataclass(frozen=True)
class ModelInfo:
    """One model a model server serves. `size` in bytes, `context` in tokens and
    `capabilities` (Ollama's words: completion, tools, thinking, vision) when the server
    reports them, else None / ()."""

    name: str
    size: int | None = None
    context: int | None = None
    capabilities: tuple[str, ...] = ()
    family: str | None = None

    @property
    def thinks(self) -> bool:
        return "thinking" in self.capabilities


def compose_system(server: str, own: str | None, mode: SystemMode = SystemMode.ADD) -> str:
    """The system prompt a model call sends: the server's, then the conversation's own
    instructions after a blank line (ADD); the own instructions alone (REPLACE); the
    server's when there are none."""
    if own is None:
        return server
    return own if mode is SystemMode.REPLACE else f"{server}\n\n{own}"


@dataclass(frozen=True)
class ChatSettings:
    """What a conversation asked for: None is the server's default."""

    model: str | None = None
    system: str | None = None
    system_mode: SystemMode = SystemMode.ADD


def settings_of(conversation: Conversation) -> ChatSettings:
    """What a conversation asked for."""
    return ChatSettings(conversation.model, conversation.system, conversation.system_mode)


@dataclass(frozen=True)
class ModelChoice:
    """What one run's model calls use: the model name (None: the backend's default), the
    conversation's own instructions (None: config/system.md alone) and what they do to it,
    and the model's context size when the server reports one (the budget is then the
    smaller of it and MODEL_CONTEXT)."""

    model: str | None = None
    system: str | None = None
    context: int | None = None
    system_mode: SystemMode = SystemMode.ADD


SERVER_DEFAULT = ModelChoice()  # the backend's default model, config/system.md alone


def check_model_name(value: object) -> str | None:
    """A model name as a request gives it: None or "" (the default) gives None; otherwise a
    string without control or format characters, at most MODEL_NAME_MAX long."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput("model must be a string (a model name, as GET /api/models lists them)")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in check_text(value, "model")):
        raise InvalidInput("model must not contain control characters")
    name = value.strip()
    if not name:
        return None
    if len(name) > MODEL_NAME_MAX:
        raise InvalidInput(f"model is longer than {MODEL_NAME_MAX} characters")
    return name


def check_system_mode(value: object) -> SystemMode:
    """`systemMode` as a request gives it: "add" (or null: the default) or "replace"."""
    if value is None:
        return SystemMode.ADD
    if not isinstance(value, str) or value not in {m.value for m in SystemMode}:
        raise InvalidInput('systemMode must be "add" or "replace"')
    return SystemMode(value)


def check_system(value: object) -> str | None:
    """A system prompt as a request gives it: None or blank gives None (the default)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput("system must be a string")
    text = check_text(value, "system")
    if len(text) > SYSTEM_MAX:
        raise InvalidInput(f"system is longer than {SYSTEM_MAX} characters")
    return text if text.strip() else None


def find_model(name: str, models: Sequence[ModelInfo]) -> ModelInfo | None:
    """The listed model a name means: the same name, or (as Ollama resolves a bare name)
    the name with the tag `:latest`."""
    for m in models:
        if m.name == name or m.name == f"{name}:latest":
            return m
    return None


def known_model(name: str, models: Sequence[ModelInfo], fix: str) -> ModelInfo:
    """The listed model, or UnknownModel naming what is listed and `fix` (how to get it)."""
    found = find_model(name, models)
    if found is not None:
        return found
    listed = ", ".join(m.name for m in models[:10]) + (", …" if len(models) > 10 else "")
    raise UnknownModel(f"The model server has no model {name!r}: {fix}" + (f" (it has: {listed})" if listed else ""))


@dataclass(frozen=True)
class SettingsChange:
    """A change a request asks for: only the fields it names (`sets_*`) change, and a
    named field given as None goes back to the server's default."""

    model: str | None = None
    system: str | None = None
    sets_model: bool = False
    sets_system: bool = False
    system_mode: SystemMode = SystemMode.ADD
    sets_mode: bool = False

    @property
    def empty(self) -> bool:
        return not (self.sets_model or self.sets_system or self.sets_mode)

    def apply(self, current: ChatSettings) -> ChatSettings:
        return ChatSettings(
            self.model if self.sets_model else current.model,
            self.system if self.sets_system else current.system,
            self.system_mode if self.sets_mode else current.system_mode,
        )


def settings_change(fields: Mapping[str, object]) -> SettingsChange:
    """The change named by a request's `model`, `system` and `system_mode` fields (absent:
    unchanged; null or blank: the default), each checked; the edges give `systemMode` under
    this name (entrypoints.dto.settings_fields)."""
    return SettingsChange(
        check_model_name(fields.get("model")),
        check_system(fields.get("system")),
        "model" in fields,
        "system" in fields,
        check_system_mode(fields.get("system_mode")),
        "system_mode" in fields,
    )
