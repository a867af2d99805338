"""Cron schedules as Kubernetes' and Volcano's CronJobs read them (robfig/cron's `ParseStandard`). Pure.

Five fields, `minute hour day-of-month month day-of-week`, each a comma list of `*`, `?`, `N`,
`N-M`, `*/S`, `N/S` (N to the field's end) or `N-M/S`; months `JAN`-`DEC` and days `SUN`-`SAT` by
name in any case; days of the week 0-6 (0 is Sunday). When both day fields are restricted a day
matches either (classic cron); when either is `*` (or `?`, or a step of 1 over everything) both must
match, which makes the other decide. The macros `@yearly` (`@annually`), `@monthly`, `@weekly`,
`@daily` (`@midnight`), `@hourly` and `@every <Go duration>` are accepted.

`next_after` walks wall-clock time in the schedule's zone the way robfig does: a time skipped by a
daylight-saving jump does not run that day, a time repeated by one runs twice.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Final

from vc_core.durations import parse_duration
from vc_core.errors import InvalidObject

MAX_SCHEDULE_LENGTH: Final = 256
MAX_RUNS: Final = 10_000
# robfig gives up after five years without a match (e.g. `0 0 30 2 *`).
SEARCH_YEARS: Final = 5

_MONTHS: Final = {name: i + 1 for i, name in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}
_WEEKDAYS: Final = {name: i for i, name in enumerate("sun mon tue wed thu fri sat".split())}
_MACROS: Final = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_EVERY: Final = "@every "
_NUMBER: Final = re.compile(r"^\d+$")


class ScheduleError(ValueError):
    """The schedule is not one robfig/cron's ParseStandard accepts; the message says why."""


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    low: int
    high: int
    names: dict[str, int] | None = None


_FIELDS: Final = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day of month", 1, 31),
    _Field("month", 1, 12, _MONTHS),
    _Field("day of week", 0, 6, _WEEKDAYS),
)


@dataclass(frozen=True, slots=True)
class CronSchedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    # The day field was `*` or `?` (robfig's star bit): the other day field alone decides.
    days_any: bool = False
    weekdays_any: bool = False


@dataclass(frozen=True, slots=True)
class EverySchedule:
    """`@every 90m`: a fixed period (whole seconds, at least one) from the previous run."""

    seconds: int


Schedule = CronSchedule | EverySchedule


def parse_schedule(text: str) -> Schedule:
    spec = text.strip()
    if not spec:
        raise ScheduleError("empty spec string")
    if len(spec) > MAX_SCHEDULE_LENGTH:
        raise ScheduleError(f"longer than {MAX_SCHEDULE_LENGTH} characters")
    if spec.startswith(_EVERY):
        return _parse_every(spec[len(_EVERY) :])
    if spec.startswith("@"):
        if spec not in _MACROS:
            raise ScheduleError(f"unrecognized descriptor: {spec[:32]}")
        spec = _MACROS[spec]
    fields = spec.split()
    if len(fields) != len(_FIELDS):
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: {spec[:64]}")
    (minutes, _), (hours, _), (days, days_any), (months, _), (weekdays, weekdays_any) = (
        _parse_field(value, field) for value, field in zip(fields, _FIELDS, strict=True)
    )
    return CronSchedule(minutes, hours, days, months, weekdays, days_any, weekdays_any)


def _parse_every(text: str) -> EverySchedule:
    try:
        seconds = parse_duration(text, field="schedule")
    except InvalidObject as exc:
        raise ScheduleError(f"failed to parse duration {text[:32]}: {exc.message}") from None
    if seconds < 0:
        raise ScheduleError(f"negative duration {text[:32]}")
    return EverySchedule(max(1, int(seconds)))


def _parse_field(text: str, field: _Field) -> tuple[frozenset[int], bool]:
    values: set[int] = set()
    any_value = False
    for part in text.split(","):
        found, star = _parse_range(part, field)
        values |= found
        any_value = any_value or star
    return frozenset(values), any_value


def _parse_range(text: str, field: _Field) -> tuple[set[int], bool]:
    """robfig's getRange: `*`/`?`, `N`, `N-M`, each with an optional `/step` (`N/S` runs to the end)."""
    body, slash, step_text = text.partition("/")
    low_text, dash, high_text = body.partition("-")
    star = low_text in ("*", "?") and not dash
    if star:
        low, high = field.low, field.high
    else:
        low = _number(low_text, field)
        high = _number(high_text, field) if dash else low
    step = 1
    if slash:
        step = _number(step_text, field)
        if not dash:
            high = field.high  # `N/S` means `N-max/S`
        if step > 1:
            star = False
    if low < field.low:
        raise ScheduleError(f"beginning of range ({low}) below minimum ({field.low}): {text[:32]}")
    if high > field.high:
        raise ScheduleError(f"end of range ({high}) above maximum ({field.high}): {text[:32]}")
    if low > high:
        raise ScheduleError(f"beginning of range ({low}) beyond end of range ({high}): {text[:32]}")
    if step == 0:
        raise ScheduleError(f"step of range should be a positive number: {text[:32]}")
    return set(range(low, high + 1, step)), star


def _number(text: str, field: _Field) -> int:
    if field.names is not None and text.lower() in field.names:
        return field.names[text.lower()]
    if not _NUMBER.match(text) or len(text) > 9:
        raise ScheduleError(f"failed to parse int from {text[:32]!r} in the {field.name} field")
    return int(text)


# -- next times ----------------------------------------------------------------------------------------
def next_after(schedule: Schedule, zone: tzinfo, after: datetime) -> datetime | None:
    """The first scheduled time strictly after `after` (aware), in UTC; None when none comes within
    five years (a schedule such as `0 0 30 2 *`)."""
    if isinstance(schedule, EverySchedule):
        return (after.astimezone(UTC) + timedelta(seconds=schedule.seconds)).replace(microsecond=0)
    found = _cron_next(schedule, zone, after.astimezone(zone))
    return found.astimezone(UTC) if found is not None else None


def next_runs(
    schedule: Schedule, zone: tzinfo, after: datetime, until: datetime, *, limit: int = MAX_RUNS
) -> list[datetime]:
    """Every scheduled time in (after, until], in order, at most `limit` of them."""
    return list(_runs(schedule, zone, after, until, min(limit, MAX_RUNS)))


def _runs(schedule: Schedule, zone: tzinfo, after: datetime, until: datetime, limit: int) -> Iterator[datetime]:
    current: datetime | None = after
    for _ in range(limit):
        current = next_after(schedule, zone, current) if current is not None else None
        if current is None or current > until:
            return
        yield current


def _plus(moment: datetime, delta: timedelta, zone: tzinfo) -> datetime:
    """Elapsed-time arithmetic (Go's Time.Add), not wall-clock arithmetic (Python's on aware datetimes)."""
    return (moment.astimezone(UTC) + delta).astimezone(zone)


def _local(day: date, hour: int, minute: int, zone: tzinfo) -> datetime:
    """Go's time.Date in `zone`: a wall time a daylight-saving jump skipped lands after the jump."""
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone).astimezone(UTC).astimezone(zone)


def _day_matches(schedule: CronSchedule, moment: datetime) -> bool:
    by_date = moment.day in schedule.days
    by_weekday = moment.isoweekday() % 7 in schedule.weekdays
    if schedule.days_any or schedule.weekdays_any:
        return by_date and by_weekday
    return by_date or by_weekday


def _cron_next(schedule: CronSchedule, zone: tzinfo, after: datetime) -> datetime | None:
    """robfig's SpecSchedule.Next: move to the next matching month, day, hour, minute, second in turn,
    starting over whenever a field wraps around."""
    t = _plus(after.replace(microsecond=0), timedelta(seconds=1), zone)
    state = _Walk(t, zone)
    last_year = t.year + SEARCH_YEARS
    while state.t.year <= last_year:
        if state.settle(schedule):
            return state.t
    return None


@dataclass
class _Walk:
    t: datetime
    zone: tzinfo
    moved: bool = False

    def _start(self, day: date, hour: int = 0, minute: int = 0) -> None:
        if not self.moved:
            self.moved = True
            self.t = _local(day, hour, minute, self.zone)

    def settle(self, schedule: CronSchedule) -> bool:
        """One pass over the fields; False when one wrapped around (the caller starts over)."""
        return self._month(schedule) and self._day(schedule) and self._hour(schedule) and self._minute(schedule)

    def _month(self, schedule: CronSchedule) -> bool:
        while self.t.month not in schedule.months:
            self._start(self.t.date().replace(day=1))
            year, month = divmod(self.t.month, 12)
            self.t = _local(date(self.t.year + year, month + 1, 1), self.t.hour, self.t.minute, self.zone)
            if self.t.month == 1:
                return False
        return True

    def _day(self, schedule: CronSchedule) -> bool:
        while not _day_matches(schedule, self.t):
            self._start(self.t.date())
            self.t = _local(self.t.date() + timedelta(days=1), self.t.hour, self.t.minute, self.zone)
            if self.t.hour != 0:  # a daylight-saving jump moved midnight: back onto the day's start
                back = 24 - self.t.hour if self.t.hour > 12 else -self.t.hour
                self.t = _plus(self.t, timedelta(hours=back), self.zone)
            if self.t.day == 1:
                return False
        return True

    def _hour(self, schedule: CronSchedule) -> bool:
        while self.t.hour not in schedule.hours:
            self._start(self.t.date(), self.t.hour)
            self.t = _plus(self.t, timedelta(hours=1), self.zone)
            if self.t.hour == 0:
                return False
        return True

    def _minute(self, schedule: CronSchedule) -> bool:
        while self.t.minute not in schedule.minutes:
            if not self.moved:
                self.moved = True
                self.t = self.t.replace(second=0)
            self.t = _plus(self.t, timedelta(minutes=1), self.zone)
            if self.t.minute == 0:
                return False
        if self.t.second != 0:
            # robfig's seconds field (always 0 here): on to the next whole minute, then start over.
            self.moved = True
            self.t = _plus(self.t.replace(second=0), timedelta(minutes=1), self.zone)
            return False
        return True
