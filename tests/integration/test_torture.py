"""The short form of the kill -9 torture test (`make soak N=1000` runs the long form; with
BACKEND=postgres, three processes on one PostgreSQL database)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.torture import run


@pytest.mark.timeout(900)
@pytest.mark.slow
def test_thirty_random_sigkills_lose_nothing_and_repeat_no_finished_call(tmp_path: Path) -> None:
    tallies = run(kills=30, seed=2026, workdir=tmp_path)
    print(tallies.table())
    assert tallies.kills == 30 and tallies.acknowledged > 0
    assert tallies.violations == []
    assert tallies.ok()


@pytest.mark.timeout(900)
@pytest.mark.slow
def test_every_call_cut_by_random_sigkills_has_its_span_at_the_receiver(tmp_path: Path) -> None:
    tallies = run(kills=8, seed=2047, workdir=tmp_path, traces=True)
    print(tallies.table())
    assert tallies.kills == 8 and tallies.acknowledged > 0 and tallies.spans > 0 and tallies.spans_interrupted > 0
    assert tallies.violations == []
    assert tallies.ok()


@pytest.mark.timeout(900)
@pytest.mark.slow
def test_queued_messages_survive_random_sigkills_each_answered_once_in_order(tmp_path: Path) -> None:
    tallies = run(kills=10, seed=2030, workdir=tmp_path, queue=True)
    print(tallies.table())
    assert tallies.kills == 10 and tallies.queued > 0
    assert tallies.violations == []
    assert tallies.ok()


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_three_processes_on_postgres_survive_random_sigkills(tmp_path: Path, pg_url: str) -> None:
    tallies = run(kills=3, seed=2027, workdir=tmp_path, database_url=pg_url)
    print(tallies.table())
    assert tallies.kills == 3 and tallies.acknowledged > 0
    assert tallies.violations == []
    assert tallies.ok()
