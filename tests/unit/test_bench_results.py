"""`make bench` keeps its figures as dated files under bench/results/, not in prose: each
section's table is printed as before and written to `<start, UTC>-<section>.md`."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import bench.__main__ as bench_main
import pytest
from bench.table import Row, print_table, recording, results_path

ROWS: list[Row] = [("tiny figure", "2.0 ms", "1.0 ms = 0.50x", "<= 1x", True)]
HEAD = ("figure", "baseline", "sophos", "target")


def test_a_recorded_section_is_printed_and_written_with_its_date(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    started = datetime(2026, 12, 4, 22, 10, 31, tzinfo=UTC)
    with recording("core", started, {"command": "`python -m bench --only core`"}, tmp_path):
        print_table(HEAD, ROWS)
    printed = capsys.readouterr().out
    written = tmp_path / "2026-12-04T2210Z-core.md"
    assert written.is_file()
    text = written.read_text(encoding="utf-8")
    assert "started: 2026-12-04 22:10 UTC" in text
    assert "`python -m bench --only core`" in text
    table = printed.split("results:")[0]
    assert "tiny figure" in table and "1.0 ms = 0.50x" in table
    assert table.strip() in text  # the file holds exactly what was printed
    assert printed.rstrip().endswith(str(written))


def test_the_file_name_is_the_start_in_utc(tmp_path: Path) -> None:
    paris = datetime(2026, 12, 4, 23, 10, tzinfo=timezone(timedelta(hours=1)))
    assert results_path("peers", paris, tmp_path).name == "2026-12-04T2210Z-peers.md"


def test_a_section_that_fails_writes_no_file(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), recording("core", datetime.now(UTC), {}, tmp_path):
        print_table(HEAD, ROWS)
        raise RuntimeError("the benchmark broke")
    assert list(tmp_path.iterdir()) == []


async def test_make_bench_writes_one_file_per_section_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def fake_core(args: argparse.Namespace) -> None:
        print_table(HEAD, ROWS)

    monkeypatch.setattr(bench_main, "core", fake_core)
    await bench_main.main(["--only", "core", "--results", str(tmp_path)])
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and files[0].name.endswith("Z-core.md")
    text = files[0].read_text(encoding="utf-8")
    assert "tiny figure" in text and "--only core" in text and "cores, Python" in text
    assert "tiny figure" in capsys.readouterr().out
