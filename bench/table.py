"""The benchmark table (figure | baseline | sophos | target | met), and the dated record of
each run under bench/results/: what a section prints is also written to a file named by the
run's start (UTC) and the section, so figures are kept as data, not copied into prose."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, redirect_stdout
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

Row = tuple[str, str, str, str, bool]

RESULTS = Path(__file__).resolve().parent / "results"


def print_table(head: tuple[str, str, str, str], rows: list[Row], met: bool = True) -> None:
    """`met` False: a plain comparison, no target column verdict."""
    cells = [(r[0], r[1], r[2], r[3]) for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    line = " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)) + (" | met" if met else "")
    print(line)
    print("-" * len(line))
    for c, r in zip(cells, rows, strict=True):
        verdict = f" | {'yes' if r[4] else 'NO'}" if met else ""
        print(" | ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)) + verdict)


def results_path(section: str, started: datetime, directory: Path = RESULTS) -> Path:
    """bench/results/2026-12-04T2210Z-core.md: the sections of one run share the prefix."""
    return directory / f"{started.astimezone(UTC):%Y-%m-%dT%H%MZ}-{section}.md"


def write_results(section: str, text: str, started: datetime, facts: Mapping[str, str], directory: Path = RESULTS) -> Path:
    """Write one section's output, headed by when and where it was measured."""
    directory.mkdir(parents=True, exist_ok=True)
    path = results_path(section, started, directory)
    lines = [
        f"# Benchmark results: {section}",
        "",
        f"- started: {started.astimezone(UTC):%Y-%m-%d %H:%M} UTC",
        *(f"- {key}: {value}" for key, value in facts.items()),
        "",
        "```text",
        text.rstrip("\n"),
        "```",
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


class _Tee(io.TextIOBase):
    """Standard output that is also kept: the tables stay on the terminal as they are made."""

    def __init__(self, shown: TextIO, kept: io.StringIO) -> None:
        self.shown, self.kept = shown, kept

    def write(self, text: str) -> int:
        self.shown.write(text)
        return self.kept.write(text)

    def flush(self) -> None:
        self.shown.flush()


@contextmanager
def recording(section: str, started: datetime, facts: Mapping[str, str], directory: Path = RESULTS) -> Iterator[None]:
    """Print as usual inside the block; when it ends without an error, write what was printed
    to the section's dated file and print its path. A section that fails writes nothing: a
    partial table would read as a result."""
    kept = io.StringIO()
    with redirect_stdout(_Tee(sys.stdout, kept)):
        yield
    path = write_results(section, kept.getvalue(), started, facts, directory)
    try:
        shown = path.relative_to(Path.cwd())
    except ValueError:
        shown = path
    print(f"results: {shown}")
