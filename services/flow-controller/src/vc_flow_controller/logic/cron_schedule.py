"""When a CronJob's next job is due: Kubernetes' (and Volcano's) `mostRecentScheduleTime`,
`nextScheduleTime` and `nextScheduleTimeDuration`, on an injected `now`. Pure.

Only the most recent missed time runs: a controller that was down for a weekend starts one job for an
hourly CronJob, not sixty (unless `startingDeadlineSeconds` has passed for it too). More than 100 missed
times is reported (`TooManyMissedTimes`): a clock far off, or a deadline that should be set.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Final

from vc_flow_controller.logic.times import parse_time
from vc_proto.cronjob import CronJob
from vc_validation.cronexpr import MAX_RUNS, Schedule, next_after

# Kubernetes' nextScheduleDelta: wake a little after the time, so the pass finds it has come.
NEXT_SCHEDULE_DELTA: Final = timedelta(milliseconds=100)
MANY_MISSED: Final = 100


class Missed(enum.Enum):
    NONE = "none"
    FEW = "few"
    MANY = "many"


class InvalidSchedule(ValueError):
    """Grammatical but never consistent (e.g. two runs less than a second apart)."""


@dataclass(frozen=True, slots=True)
class Recent:
    earliest: datetime
    most_recent: datetime | None
    missed: Missed


def earliest_time(cronjob: CronJob) -> datetime | None:
    status = cronjob.status
    return parse_time(status.last_schedule_time if status else None) or parse_time(cronjob.metadata.creation_timestamp)


def most_recent_schedule_time(
    cronjob: CronJob, now: datetime, schedule: Schedule, zone: tzinfo, *, include_deadline: bool
) -> Recent:
    earliest = earliest_time(cronjob) or now
    deadline = cronjob.spec.starting_deadline_seconds if cronjob.spec else None
    if include_deadline and deadline is not None:
        # The controller schedules nothing before this point.
        earliest = max(earliest, now - timedelta(seconds=min(deadline, _MAX_SECONDS)))
    t1 = next_after(schedule, zone, earliest)
    if t1 is None or now < t1:
        return Recent(earliest, None, Missed.NONE)
    t2 = next_after(schedule, zone, t1)
    if t2 is None or now < t2:
        return Recent(earliest, t1, Missed.NONE)
    between = round((t2 - t1).total_seconds())
    if between < 1:
        raise InvalidSchedule("time difference between two schedules is less than 1 second")
    missed_count = int((now - t1).total_seconds()) // between + 1
    # Start from an estimate of the last few runs, then walk forward exactly (Kubernetes' approach,
    # which an irregular schedule such as `30 6-16/4 * * 1-5` needs).
    potential = t1 + timedelta(seconds=(missed_count - 2) * between)
    most_recent: datetime | None = None
    moment = next_after(schedule, zone, potential)
    for _ in range(MAX_RUNS):
        if moment is None or moment > now:
            break
        most_recent = moment
        moment = next_after(schedule, zone, moment)
    missed = Missed.MANY if missed_count > MANY_MISSED else Missed.FEW
    return Recent(earliest, most_recent, missed)


def next_schedule_time(cronjob: CronJob, now: datetime, schedule: Schedule, zone: tzinfo) -> Recent:
    """`most_recent`: the time a job is due for now (None: none is), within the starting deadline."""
    recent = most_recent_schedule_time(cronjob, now, schedule, zone, include_deadline=True)
    if recent.most_recent is not None and recent.most_recent > now:
        return Recent(recent.earliest, None, recent.missed)
    return recent


def requeue_after(cronjob: CronJob, now: datetime, schedule: Schedule, zone: tzinfo) -> timedelta | None:
    """How long until the next pass should run; None when the schedule has no time left at all."""
    try:
        recent = most_recent_schedule_time(cronjob, now, schedule, zone, include_deadline=False)
        base = recent.most_recent or (recent.earliest if recent.missed is Missed.NONE else now)
    except InvalidSchedule:
        base = now
    following = next_after(schedule, zone, base)
    if following is None:
        return None
    return max(following + NEXT_SCHEDULE_DELTA - now, timedelta(0))


_MAX_SECONDS: Final = 10 * 365 * 24 * 3600  # a larger deadline reaches before any CronJob was created
