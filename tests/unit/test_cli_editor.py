"""Which editor the CLI opens on a tool call's arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from entrypoints.cli.asking import editor


def executable(directory: Path, name: str) -> None:
    path = directory / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)


def test_editor_then_visual_then_vi_or_nano_never_sensible_editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    executable(tmp_path, "sensible-editor")  # Debian's: it would ask the person to choose one
    executable(tmp_path, "nano")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("EDITOR", "ed")
    monkeypatch.setenv("VISUAL", "emacs")
    assert editor() == "ed"
    monkeypatch.setenv("EDITOR", " ")
    assert editor() == "emacs"
    monkeypatch.delenv("EDITOR")
    monkeypatch.delenv("VISUAL")
    assert editor() == "nano"
    executable(tmp_path, "vi")
    assert editor() == "vi"
