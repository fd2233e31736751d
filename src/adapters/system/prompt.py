"""SystemPromptSource: `<CONFIG_DIR>/system.md`, read from disk on every model call."""

from __future__ import annotations

from pathlib import Path

from domain.errors import AgentFailure
from ports.prompts import DEFAULT_SYSTEM_PROMPT, SystemPromptSource


class FilePrompt(SystemPromptSource):
    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> str:
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as e:
            raise AgentFailure(f"Cannot read the system prompt {self.path}: {e.strerror}") from e
        return text.strip() or DEFAULT_SYSTEM_PROMPT


class FixedPrompt(SystemPromptSource):
    def __init__(self, text: str = DEFAULT_SYSTEM_PROMPT) -> None:
        self.text = text

    def read(self) -> str:
        return self.text
