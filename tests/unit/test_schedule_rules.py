"""The schedules' rules (domain.schedules) as plain functions of a fixed clock: cron in a
time zone across daylight-saving changes, the six-field form, one-off times, end dates,
and what a tick does with late and missed firings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from domain.errors import InvalidInput, ScheduleNotFound
from domain.schedules import (
    CatchUp,
    Schedule,
    ScheduleEdit,
    ScheduleSpec,
    Timing,
    check_cron,
    check_schedule_id,
    parse_catch_up,
    plan_tick,
)

PARIS = ZoneInfo("Europe/Paris")
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def firings(timing: Timing, start: datetime, count: int) -> list[datetime]:
    found, at = [], start
    for _ in range(count):
        nxt = timing.next_after(at)
        assert nxt is not None
        found.append(nxt)
        at = nxt
    return found


def schedule(cron: str = "0 8 * * *", tz: str = "UTC", **fields: object) -> Schedule:
    made = Schedule("s", "u", Timing(cron, tz), "hello", NOW, **fields)  # type: ignore[arg-type]
    return made


def test_a_daily_time_in_paris_follows_its_wall_clock_across_both_changes() -> None:
    timing = Timing("0 8 * * *", "Europe/Paris")
    spring = firings(timing, datetime(2026, 3, 27, 9, 0, tzinfo=PARIS), 2)
    assert [f.astimezone(PARIS).hour for f in spring] == [8, 8]
    assert [f.hour for f in spring] == [7, 6]  # UTC+1 then UTC+2
    autumn = firings(timing, datetime(2026, 10, 23, 9, 0, tzinfo=PARIS), 2)
    assert [f.hour for f in autumn] == [6, 7]


def test_a_time_the_spring_change_skips_fires_once_after_the_gap_and_one_it_repeats_fires_once() -> None:
    timing = Timing("30 2 * * *", "Europe/Paris")
    spring = firings(timing, datetime(2026, 3, 29, 0, 0, tzinfo=PARIS), 2)
    assert spring[0] == utc(2026, 3, 29, 1, 0)  # 03:00 Paris, the first time after the gap
    assert spring[1] == utc(2026, 3, 30, 0, 30)
    autumn = firings(timing, datetime(2026, 10, 25, 0, 0, tzinfo=PARIS), 2)
    assert autumn == [utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]  # 02:30 once, not twice


def test_every_half_hour_counts_the_repeated_hour_in_utc_without_gaps_or_doubles() -> None:
    timing = Timing("*/30 * * * *", "Europe/Paris")
    found = firings(timing, utc(2026, 10, 24, 23, 45), 6)
    steps = {b - a for a, b in zip(found, found[1:], strict=False)}
    assert steps == {timedelta(minutes=30)}


def test_the_six_field_form_starts_with_seconds() -> None:
    timing = Timing("*/5 * * * * *")
    assert firings(timing, utc(2026, 1, 1, 0, 0, 1), 3) == [
        utc(2026, 1, 1, 0, 0, 5),
        utc(2026, 1, 1, 0, 0, 10),
        utc(2026, 1, 1, 0, 0, 15),
    ]
    assert check_cron("* * * * * *") == "* * * * * *"


@pytest.mark.parametrize(
    "expr", ["", "* * * *", "* * * * * * *", "61 * * * *", "0 0 31 2 *", "x y z w v", "* " * 200, 5, None, "0 0 ? * L#9"]
)
def test_a_bad_cron_expression_is_refused_clearly(expr: object) -> None:
    with pytest.raises(InvalidInput):
        check_cron(expr)


@pytest.mark.parametrize("tz", ["Mars/Olympus", "../../etc/passwd", "", "x" * 100])
def test_an_unknown_time_zone_is_refused(tz: str) -> None:
    with pytest.raises(InvalidInput, match="time zone"):
        Timing("0 8 * * *", tz)


def test_a_timing_is_a_cron_or_a_time_never_both_nor_neither() -> None:
    with pytest.raises(InvalidInput):
        Timing(None)
    with pytest.raises(InvalidInput):
        Timing("* * * * *", at=NOW)
    with pytest.raises(InvalidInput, match="offset"):
        Timing(None, at=datetime(2026, 1, 1))


def test_a_one_off_fires_once_and_then_never() -> None:
    timing = Timing(None, at=utc(2026, 1, 2))
    assert timing.next_after(NOW) == utc(2026, 1, 2)
    assert timing.next_after(utc(2026, 1, 2)) is None


def test_an_end_date_stops_the_firings() -> None:
    made = schedule(ends_at=utc(2026, 1, 3, 9)).armed(NOW)
    assert made.next_at == utc(2026, 1, 2, 8)
    assert made.following(utc(2026, 1, 2, 8)) == utc(2026, 1, 3, 8)
    assert made.following(utc(2026, 1, 3, 8)) is None


def test_a_paused_schedule_has_nothing_due() -> None:
    paused = ScheduleEdit(enabled=False).apply(schedule().armed(NOW), NOW)
    assert paused.next_at is None and not paused.enabled
    assert plan_tick(paused, NOW + timedelta(days=3), NOW) is None


def test_resuming_goes_on_from_the_next_firing_never_catching_up_on_the_pause() -> None:
    paused = ScheduleEdit(enabled=False).apply(schedule().armed(NOW), NOW)
    later = utc(2026, 1, 5, 9)
    assert ScheduleEdit(enabled=True).apply(paused, later).next_at == utc(2026, 1, 6, 8)


def test_a_late_firing_while_processes_tick_runs_for_its_own_time_then_the_next() -> None:
    due = schedule("* * * * * *").armed(NOW)  # next_at NOW + 1 s
    now = NOW + timedelta(seconds=3)  # a slow tick: three firings passed while a process ticked
    plan = plan_tick(due, now, last_tick=now - timedelta(seconds=1))
    assert plan is not None
    assert plan.fire == NOW + timedelta(seconds=1) and plan.following == NOW + timedelta(seconds=2)
    assert not plan.missed_some


def test_firings_missed_while_no_process_ran_run_once_as_the_latest() -> None:
    due = schedule("0 * * * *").armed(NOW)  # hourly; next 13:00
    now = NOW + timedelta(hours=5, minutes=10)  # down from 12:00 to 17:10
    plan = plan_tick(due, now, last_tick=NOW)
    assert plan is not None
    assert plan.fire == utc(2026, 1, 1, 17) and plan.following == utc(2026, 1, 1, 18) and plan.missed_some


def test_a_catch_up_never_runs_a_firing_past_the_end_date() -> None:
    due = schedule("0 * * * *", ends_at=utc(2026, 1, 1, 15, 30)).armed(NOW)
    plan = plan_tick(due, NOW + timedelta(hours=5, minutes=10), last_tick=NOW)
    assert plan is not None and plan.fire == utc(2026, 1, 1, 15) and plan.following is None


def test_firings_missed_while_no_process_ran_are_skipped_with_catch_up_skip() -> None:
    due = schedule("0 * * * *", catch_up=CatchUp.SKIP).armed(NOW)
    plan = plan_tick(due, NOW + timedelta(hours=5, minutes=10), last_tick=NOW)
    assert plan is not None and plan.fire is None and plan.following == utc(2026, 1, 1, 18)


def test_a_firing_due_before_the_last_tick_is_late_not_missed() -> None:
    due = schedule("0 * * * *").armed(NOW)
    # a process ticked at 13:00:01 (but did not start it), then all were down until 17:10
    plan = plan_tick(due, NOW + timedelta(hours=5, minutes=10), last_tick=utc(2026, 1, 1, 13, 0, 1))
    assert plan is not None and plan.fire == utc(2026, 1, 1, 13) and not plan.missed_some


def test_the_first_tick_ever_treats_what_passed_as_missed() -> None:
    due = schedule("0 * * * *", catch_up=CatchUp.SKIP).armed(NOW)
    plan = plan_tick(due, NOW + timedelta(hours=3), last_tick=None)
    assert plan is not None and plan.fire is None


def test_nothing_is_due_before_its_time() -> None:
    assert plan_tick(schedule().armed(NOW), NOW, NOW) is None


def test_an_edit_switches_between_cron_and_a_one_off_time() -> None:
    made = schedule().armed(NOW)
    one_off = ScheduleEdit(at=utc(2026, 2, 1)).apply(made, NOW)
    assert one_off.timing == Timing(None, "UTC", utc(2026, 2, 1)) and one_off.next_at == utc(2026, 2, 1)
    back = ScheduleEdit(cron="0 9 * * *", tz="Europe/Paris").apply(one_off, NOW)
    assert back.timing.cron == "0 9 * * *" and back.next_at == utc(2026, 1, 2, 8)


def test_a_spec_checks_its_message_and_end_date() -> None:
    with pytest.raises(InvalidInput):
        ScheduleSpec(Timing("* * * * *"), "   ")
    with pytest.raises(InvalidInput):
        ScheduleSpec(Timing("* * * * *"), "x" * 20_000)
    with pytest.raises(InvalidInput, match="offset"):
        ScheduleSpec(Timing("* * * * *"), "hi", ends_at=datetime(2026, 1, 1))


def test_catch_up_and_ids_parse_or_refuse() -> None:
    assert parse_catch_up(None) is CatchUp.ONCE and parse_catch_up("skip") is CatchUp.SKIP
    with pytest.raises(InvalidInput):
        parse_catch_up("twice")
    with pytest.raises(ScheduleNotFound):
        check_schedule_id("../x")
    assert check_schedule_id("6F9619FF-8B86-D011-B42D-00C04FC964FF") == "6f9619ff-8b86-d011-b42d-00c04fc964ff"
