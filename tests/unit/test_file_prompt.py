"""The system prompt file: every edit is seen at the next model call, without reading an
unchanged file again."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from adapters.system.prompt import FilePrompt
from domain.errors import AgentFailure
from ports.prompts import DEFAULT_SYSTEM_PROMPT


def test_an_edit_is_seen_at_the_next_read_and_an_unchanged_file_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "system.md"
    path.write_text("You are terse.\n")
    prompt = FilePrompt(path)
    assert prompt.read() == "You are terse."
    reads: list[Path] = []
    original = Path.read_text

    def counting(self: Path, *args: Any, **kwargs: Any) -> str:
        reads.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counting)
    assert prompt.read() == "You are terse." and reads == []
    path.write_text("You are kind.\n")  # the same size: the modification time tells
    os.utime(path, ns=(1, 10**18))
    assert prompt.read() == "You are kind." and len(reads) == 1
    path.write_text("   ")
    assert prompt.read() == DEFAULT_SYSTEM_PROMPT
    path.unlink()
    with pytest.raises(AgentFailure, match="Cannot read the system prompt"):
        prompt.read()
