"""The REPL's line reader: \"\"\" blocks, and a history file that stays bounded."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from pathlib import Path

import pytest

from entrypoints.cli import lines
from entrypoints.cli.lines import LineReader


def typed(monkeypatch: pytest.MonkeyPatch, *entered: str) -> None:
    answers: Iterator[str] = iter(entered)

    def fake_input(prompt: str = "") -> str:
        try:
            line = next(answers)
        except StopIteration:
            raise EOFError from None
        reader = lines._readline()
        if reader is not None and line.strip():
            reader.add_history(line)  # what input() does on a terminal
        return line

    monkeypatch.setattr(builtins, "input", fake_input)


def test_a_block_between_triple_quotes_is_one_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    typed(monkeypatch, '"""first', "", "  second", 'last"""', '"""one line"""', "plain")
    reader = LineReader(None)
    assert reader.read() == "first\n\n  second\nlast"
    assert reader.read() == "one line"
    assert reader.read() == "plain"
    with pytest.raises(EOFError):
        reader.read()


def test_the_history_file_keeps_the_last_lines_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readline = lines._readline()
    if readline is None:
        pytest.skip("no readline in this Python")
    readline.clear_history()
    monkeypatch.setattr(lines, "HISTORY_LINES", 5)
    history = tmp_path / "data" / "repl_history"
    typed(monkeypatch, *(f"line {i}" for i in range(8)))
    reader = LineReader(history)
    for _ in range(3):
        reader.read()
    assert history.stat().st_mode & 0o777 == 0o600
    assert history.read_text().split() == ["line", "0", "line", "1", "line", "2"]  # each line is written at once
    for _ in range(5):
        reader.read()
    reader.close()
    kept = [x for x in history.read_text().splitlines() if x.startswith("line")]
    assert kept == [f"line {i}" for i in range(3, 8)]
    readline.clear_history()
