"""Cron schedules read as robfig/cron's ParseStandard reads them (Kubernetes' and Volcano's CronJobs):
what parses and why not, and the next times, in a zone, across daylight-saving jumps."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from vc_validation.cronexpr import (
    MAX_RUNS,
    CronSchedule,
    EverySchedule,
    ScheduleError,
    next_after,
    next_runs,
    parse_schedule,
)

NEW_YORK = ZoneInfo("America/New_York")


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", "empty spec string", id="empty"),
        pytest.param("* * * *", "expected exactly 5 fields, found 4", id="four-fields"),
        pytest.param("0 * * * * *", "expected exactly 5 fields, found 6", id="six-fields-no-seconds"),
        pytest.param("60 * * * *", "end of range (60) above maximum (59)", id="minute-60"),
        pytest.param("* 24 * * *", "above maximum (23)", id="hour-24"),
        pytest.param("* * 0 * *", "below minimum (1)", id="day-0"),
        pytest.param("* * * 13 *", "above maximum (12)", id="month-13"),
        pytest.param("* * * * 7", "above maximum (6)", id="weekday-7"),
        pytest.param("5-1 * * * *", "beyond end of range", id="backwards-range"),
        pytest.param("*/0 * * * *", "step of range should be a positive number", id="step-0"),
        pytest.param("x * * * *", "failed to parse int", id="not-a-number"),
        pytest.param("-1 * * * *", "failed to parse int", id="negative"),
        pytest.param("* * * JANUARY *", "failed to parse int", id="long-month-name"),
        pytest.param("@fortnightly", "unrecognized descriptor", id="unknown-macro"),
        pytest.param("@every x", "failed to parse duration", id="bad-every"),
        pytest.param("1 " * 200, "longer than 256", id="bounded"),
    ],
)
def test_invalid_schedules_say_why(text: str, message: str) -> None:
    with pytest.raises(ScheduleError, match=re.escape(message)):
        parse_schedule(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("*/5 * * * *", {"minutes": frozenset(range(0, 60, 5))}, id="step"),
        pytest.param("5/20 * * * *", {"minutes": frozenset({5, 25, 45})}, id="n-slash-step-runs-to-end"),
        pytest.param("1-10/3,30 * * * *", {"minutes": frozenset({1, 4, 7, 10, 30})}, id="range-step-list"),
        pytest.param("0 0 * jan-MAR,dec *", {"months": frozenset({1, 2, 3, 12})}, id="month-names-any-case"),
        pytest.param("0 0 * * MON-FRI", {"weekdays": frozenset({1, 2, 3, 4, 5})}, id="weekday-names"),
        pytest.param("0 0 ? * SUN", {"days_any": True, "weekdays": frozenset({0})}, id="question-mark"),
        pytest.param("0 0 */2 * *", {"days_any": False}, id="step-over-all-is-not-any"),
        pytest.param("0 0 */1 * *", {"days_any": True}, id="step-one-is-any"),
    ],
)
def test_fields_parse_as_robfig_does(text: str, expected: dict[str, object]) -> None:
    schedule = parse_schedule(text)
    assert isinstance(schedule, CronSchedule)
    for field, value in expected.items():
        assert getattr(schedule, field) == value, field


@pytest.mark.parametrize(
    ("macro", "same_as"),
    [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
    ],
)
def test_macros_are_their_five_field_forms(macro: str, same_as: str) -> None:
    assert parse_schedule(macro) == parse_schedule(same_as)


def test_every_is_a_fixed_period_of_whole_seconds_from_the_previous_run() -> None:
    assert parse_schedule("@every 1m30s") == EverySchedule(90)
    assert parse_schedule("@every 100ms") == EverySchedule(1)
    runs = next_runs(parse_schedule("@every 90m"), UTC, at(2024, 1, 1, 0, 0, 5), at(2024, 1, 1, 4))
    assert runs == [at(2024, 1, 1, 1, 30, 5), at(2024, 1, 1, 3, 0, 5)]


@pytest.mark.parametrize(
    ("text", "after", "expected"),
    [
        pytest.param("*/5 * * * *", at(2024, 1, 1, 12, 0), at(2024, 1, 1, 12, 5), id="strictly-after"),
        pytest.param("*/5 * * * *", at(2024, 1, 1, 11, 59, 30), at(2024, 1, 1, 12, 0), id="mid-minute"),
        pytest.param("0 0 1 1 *", at(2024, 6, 1), at(2025, 1, 1), id="next-year"),
        pytest.param("0 0 29 2 *", at(2024, 3, 1), at(2028, 2, 29), id="leap-day"),
        pytest.param("59 23 31 12 *", at(2024, 12, 31, 23, 59), at(2025, 12, 31, 23, 59), id="year-end"),
        # Both day fields restricted: either matches (1 Jan 2024 is a Monday, 6 Jan a Saturday).
        pytest.param("0 9 6 * MON", at(2024, 1, 1, 10), at(2024, 1, 6, 9), id="day-or-weekday"),
        # One of them `*`: both must match (the first Monday on or after a 13th that is one).
        pytest.param("0 9 13 * *", at(2024, 1, 1), at(2024, 1, 13, 9), id="day-only"),
    ],
)
def test_next_after(text: str, after: datetime, expected: datetime) -> None:
    assert next_after(parse_schedule(text), UTC, after) == expected


def test_a_schedule_that_never_matches_has_no_next_time() -> None:
    assert next_after(parse_schedule("0 0 30 2 *"), UTC, at(2024, 1, 1)) is None
    assert next_runs(parse_schedule("0 0 30 2 *"), UTC, at(2024, 1, 1), at(2040, 1, 1)) == []


def test_times_are_wall_clock_times_of_the_zone() -> None:
    tokyo = ZoneInfo("Asia/Tokyo")
    assert next_after(parse_schedule("0 9 * * *"), tokyo, at(2023, 12, 31, 12)) == at(2024, 1, 1, 0)  # 09:00 JST
    weekly = next_runs(parse_schedule("@weekly"), tokyo, at(2024, 1, 1), at(2024, 1, 20))
    assert weekly == [at(2024, 1, 6, 15), at(2024, 1, 13, 15)]  # Sunday midnight in Tokyo


def test_a_time_the_spring_jump_skips_does_not_run_that_day() -> None:
    # 10 March 2024, New York: 02:00 EST jumps to 03:00 EDT.
    runs = next_runs(parse_schedule("30 2 * * *"), NEW_YORK, at(2024, 3, 9), at(2024, 3, 12))
    assert runs == [at(2024, 3, 9, 7, 30), at(2024, 3, 11, 6, 30)]


def test_a_time_the_autumn_jump_repeats_runs_twice() -> None:
    # 3 November 2024, New York: 02:00 EDT falls back to 01:00 EST; 01:30 happens twice.
    runs = next_runs(parse_schedule("30 1 * * *"), NEW_YORK, at(2024, 11, 2, 12), at(2024, 11, 4, 12))
    assert runs == [at(2024, 11, 3, 5, 30), at(2024, 11, 3, 6, 30), at(2024, 11, 4, 6, 30)]


def test_hourly_runs_keep_going_through_a_jump() -> None:
    runs = next_runs(parse_schedule("0 * * * *"), NEW_YORK, at(2024, 3, 10, 5), at(2024, 3, 10, 9))
    assert runs == [at(2024, 3, 10, h) for h in (6, 7, 8, 9)]


def test_next_runs_is_bounded_and_ordered() -> None:
    every_minute = parse_schedule("* * * * *")
    runs = next_runs(every_minute, UTC, at(2024, 1, 1), at(2030, 1, 1))
    assert len(runs) == MAX_RUNS
    assert runs == sorted(runs) and runs[0] == at(2024, 1, 1, 0, 1)
    assert len(next_runs(every_minute, UTC, at(2024, 1, 1), at(2024, 1, 1, 1), limit=5)) == 5
