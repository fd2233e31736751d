"""The CLI's small rules: relative times and exit codes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from entrypoints.cli.exits import exit_code_of
from entrypoints.cli.output import ago

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def test_relative_times_read_as_a_person_says_them() -> None:
    cases = [
        (timedelta(seconds=20), "just now"),
        (timedelta(minutes=5, seconds=30), "5 min ago"),
        (timedelta(hours=3), "3 h ago"),
        (timedelta(days=1, hours=2), "yesterday"),
        (timedelta(days=4), "4 days ago"),
    ]
    for delta, text in cases:
        assert ago(NOW - delta, NOW) == text
    assert ago(NOW - timedelta(days=30), NOW) == (NOW - timedelta(days=30)).astimezone().strftime("%Y-%m-%d")


def test_model_errors_exit_5_and_unknown_codes_exit_1() -> None:
    assert exit_code_of("MODEL_UNAVAILABLE") == exit_code_of("MODEL_UNREACHABLE") == 5
    assert exit_code_of("NOT_FOUND") == 3 and exit_code_of("SESSION_IN_PROGRESS") == 4
    assert exit_code_of("AGENT_FAILURE") == exit_code_of("HTTP_502") == exit_code_of(None) == 1
