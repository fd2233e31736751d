"""SystemPromptSource: `<CONFIG_DIR>/system.md`, as it is on disk at every model call (re-read
when its size or modification time changed: one stat per call instead of open, read, decode)."""

from __future__ import annotations

import os
from pathlib import Path

from domain.errors import AgentFailure
from ports.prompts import DEFAULT_SYSTEM_PROMPT, SystemPromptSource


class FilePrompt(SystemPromptSource):
    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: tuple[tuple[int, int, int, int], str] | None = None  # (identity, text)

    def read(self) -> str:
        try:
            st = os.stat(self.path)
            stamp = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            if self._seen is not None and self._seen[0] == stamp:
                return self._seen[1]
            text = self.path.read_text(encoding="utf-8").strip() or DEFAULT_SYSTEM_PROMPT
        except OSError as e:
            raise AgentFailure(f"Cannot read the system prompt {self.path}: {e.strerror}") from e
        self._seen = (stamp, text)
        return text


class FixedPrompt(SystemPromptSource):
    def __init__(self, text: str = DEFAULT_SYSTEM_PROMPT) -> None:
        self.text = text

    def read(self) -> str:
        return self.text
