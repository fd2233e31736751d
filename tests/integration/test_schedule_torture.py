"""The short form of the scheduled runs' kill -9 torture (tests/support/schedule_torture.py;
`make soak-schedules N=200` runs the long form): two processes share the database, one at a
time is SIGKILLed and started again, and every second of the window ran exactly once, by
its scheduled time; and every webhook delivery arrived at a local receiver at least once and
was processed once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.schedule_torture import ScheduleTorture


def assert_exactly_once(t: ScheduleTorture, seconds: float, kills: int) -> None:
    report = t.run(seconds, kills)
    print(report.table())
    assert report.kills >= 2 and report.firings >= seconds / 2
    assert (report.missing, report.not_completed, report.message_counts, report.ledger) == ([], [], [], [])
    assert report.unclaimed_runs == 0 and report.outside == 0
    # webhooks: every delivery arrived at least once (each was retried after a 500) and was
    # processed once; every finished run of a firing told its outcome, every firing its completion
    assert report.deliveries >= report.firings and report.redeliveries >= report.deliveries
    assert (report.undelivered, report.runs_without_delivery, report.firings_without_outcome) == ([], [], [])
    assert report.twice_processed == 0 and report.bad_signatures == 0
    assert report.ok()


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_every_second_fires_once_on_one_sqlite_file_through_random_sigkills(tmp_path: Path) -> None:
    t = ScheduleTorture(tmp_path, seed=46)
    try:
        assert_exactly_once(t, seconds=20, kills=4)
    finally:
        t.close()


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_every_second_fires_once_on_two_processes_sharing_postgres_through_random_sigkills(tmp_path: Path, pg_url: str) -> None:
    t = ScheduleTorture(tmp_path, seed=47, database_url=pg_url)
    try:
        assert_exactly_once(t, seconds=20, kills=3)
    finally:
        t.close()
