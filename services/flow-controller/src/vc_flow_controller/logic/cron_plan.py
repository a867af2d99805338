"""What one sync of a CronJob does (Volcano's `syncCronJob`, itself Kubernetes' CronJob controller). Pure.

In order:
1. Finished jobs (Completed, Failed, Terminated) leave `status.active`; the latest Completed one's
   finish time is `status.lastSuccessfulTime`; Completed and Failed jobs beyond the history limits are
   deleted, oldest first.
2. Active references to jobs that are gone (or were replaced by a job of another uid) are dropped;
   unfinished jobs the CronJob owns but does not list are reported (`UnexpectedJob`), not adopted.
3. Suspended: nothing more. An unknown time zone or a bad schedule: reported, nothing more.
4. The most recent scheduled time not yet run (within `startingDeadlineSeconds`) is due; none: wait.
5. Forbid with an active job: skip this time. Replace: delete the active jobs first.
6. Create the job for that time; the shell adds it to `active` and sets `lastScheduleTime`.
The plan always says when to look again (`requeue`), so no time is missed without an event.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo

import msgspec

from vc_core.times import rfc3339
from vc_flow_controller.logic.cron_jobs import build_cron_job, cron_job_name
from vc_flow_controller.logic.cron_schedule import InvalidSchedule, Missed, next_schedule_time, requeue_after
from vc_flow_controller.logic.owners import phase_of
from vc_flow_controller.logic.times import parse_time
from vc_proto.batch import Job
from vc_proto.cronjob import ConcurrencyPolicy, CronJob, CronJobStatus, ObjectReference
from vc_proto.vocabulary import JobPhase
from vc_validation.cronexpr import Schedule, ScheduleError, parse_schedule
from vc_validation.timezones import UnknownTimeZone, load_zone

FINISHED = frozenset({JobPhase.COMPLETED.value, JobPhase.FAILED.value, JobPhase.TERMINATED.value})


@dataclass(frozen=True, slots=True)
class Note:
    """A Kubernetes-style event on the CronJob: `Normal` or `Warning`, a reason, a message."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class CronPlan:
    status: CronJobStatus
    delete: tuple[Job, ...] = ()  # before the create: history beyond the limits, then Replace's active jobs
    create: Job | None = None
    scheduled: datetime | None = None  # the time `create` is for
    requeue: timedelta | None = None
    notes: tuple[Note, ...] = field(default=())


def is_finished(job: Job) -> bool:
    return phase_of(job) in FINISHED


def plan_cron(cronjob: CronJob, owned: Sequence[Job], lookup: Callable[[str], Job | None], now: datetime) -> CronPlan:
    """`owned`: the jobs this CronJob controls; `lookup`: any job of its namespace by name."""
    notes: list[Note] = []
    status = cronjob.status or CronJobStatus()
    status, delete = _finished(cronjob, status, owned, notes)
    status = _stale_active(status, owned, lookup, notes)
    spec = cronjob.spec
    if spec is None or spec.suspend:
        return CronPlan(status, delete, notes=tuple(notes))
    try:
        zone = load_zone(spec.time_zone) if spec.time_zone is not None else UTC
        schedule = parse_schedule(spec.schedule or "")
    except UnknownTimeZone as exc:
        return CronPlan(status, delete, notes=(*notes, Note("Warning", "InvalidTimeZone", f"invalid time zone {exc}")))
    except ScheduleError as exc:
        return CronPlan(status, delete, notes=(*notes, Note("Warning", "InvalidSchedule", f"invalid schedule: {exc}")))
    current = msgspec.structs.replace(cronjob, status=status)
    return _schedule(current, status, delete, schedule, zone, lookup, now, notes)


def _schedule(
    cronjob: CronJob,
    status: CronJobStatus,
    delete: tuple[Job, ...],
    schedule: Schedule,
    zone: tzinfo,
    lookup: Callable[[str], Job | None],
    now: datetime,
    notes: list[Note],
) -> CronPlan:
    later = requeue_after(cronjob, now, schedule, zone)
    try:
        recent = next_schedule_time(cronjob, now, schedule, zone)
    except InvalidSchedule as exc:
        notes.append(Note("Warning", "InvalidSchedule", f"Error getting schedule time: {exc}"))
        return CronPlan(status, delete, requeue=later, notes=tuple(notes))
    if recent.missed is Missed.MANY:
        notes.append(
            Note(
                "Warning",
                "TooManyMissedTimes",
                "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew",
            )
        )
    scheduled = recent.most_recent
    if scheduled is None or _already_run(cronjob, status, scheduled):
        return CronPlan(status, delete, requeue=later, notes=tuple(notes))
    policy = (cronjob.spec.concurrency_policy if cronjob.spec else None) or ConcurrencyPolicy.ALLOW.value
    if policy == ConcurrencyPolicy.FORBID and status.active:
        notes.append(
            Note("Warning", "ForbidConcurrent", "Skipping job creation because another job is already running")
        )
        return CronPlan(status, delete, requeue=later, notes=tuple(notes))
    if policy == ConcurrencyPolicy.REPLACE and status.active:
        notes.append(Note("Warning", "ReplaceConcurrent", "Replacing active job for CronJob"))
        replaced = tuple(job for ref in status.active if (job := lookup(ref.name or "")) is not None)
        delete = (*delete, *replaced)
        status = msgspec.structs.replace(status, active=None)
    job = build_cron_job(cronjob, scheduled, zone)
    return CronPlan(status, delete, create=job, scheduled=scheduled, requeue=later, notes=tuple(notes))


def _already_run(cronjob: CronJob, status: CronJobStatus, scheduled: datetime) -> bool:
    name = cron_job_name(cronjob, scheduled)
    if any(ref.name == name for ref in status.active or ()):
        return True
    return parse_time(status.last_schedule_time) == scheduled


def _finished(
    cronjob: CronJob, status: CronJobStatus, owned: Sequence[Job], notes: list[Note]
) -> tuple[CronJobStatus, tuple[Job, ...]]:
    finished = [job for job in owned if is_finished(job)]
    gone = {job.metadata.uid for job in finished}
    active = [ref for ref in status.active or () if ref.uid not in gone]
    for ref in status.active or ():
        if ref.uid in gone:
            notes.append(Note("Normal", "SawCompletedJob", f"Saw completed job: {ref.name} in active, remove"))
    last_success = parse_time(status.last_successful_time)
    succeeded = [job for job in finished if phase_of(job) == JobPhase.COMPLETED]
    for job in succeeded:
        at = parse_time(job.status.state.last_transition_time if job.status and job.status.state else None)
        if at is not None and (last_success is None or at > last_success):
            last_success = at
    spec = cronjob.spec
    delete: list[Job] = []
    if spec is not None:
        for jobs, limit in (
            (succeeded, spec.successful_jobs_history_limit),
            ([j for j in finished if phase_of(j) == JobPhase.FAILED], spec.failed_jobs_history_limit),
        ):
            if limit is not None and len(jobs) > limit:
                delete += sorted(jobs, key=_creation_order)[: len(jobs) - limit]
    status = msgspec.structs.replace(
        status, active=active or None, last_successful_time=rfc3339(last_success) if last_success else None
    )
    return status, tuple(delete)


def _creation_order(job: Job) -> tuple[bool, datetime, str]:
    created = parse_time(job.metadata.creation_timestamp)
    return (created is None, created or datetime.min.replace(tzinfo=UTC), job.metadata.name or "")


def _stale_active(
    status: CronJobStatus, owned: Sequence[Job], lookup: Callable[[str], Job | None], notes: list[Note]
) -> CronJobStatus:
    listed = {ref.uid for ref in status.active or ()}
    for job in owned:
        if job.metadata.uid not in listed and not is_finished(job):
            notes.append(
                Note(
                    "Warning",
                    "UnexpectedJob",
                    f"Saw a job that the controller did not create or forgot: {job.metadata.name}",
                )
            )
    mine = {job.metadata.uid for job in owned}
    keep: list[ObjectReference] = []
    for ref in status.active or ():
        if _still_there(ref, mine, lookup):
            keep.append(ref)
        else:
            notes.append(
                Note("Warning", "StaleReference", f"Active job {ref.name!r} no longer exists (UID: {ref.uid})")
            )
    return msgspec.structs.replace(status, active=keep or None)


def _still_there(ref: ObjectReference, mine: set[str | None], lookup: Callable[[str], Job | None]) -> bool:
    """Kubernetes drops a reference whose job is not found, or was replaced by one of another uid."""
    if ref.uid in mine:
        return True
    job = lookup(ref.name or "")
    return job is not None and job.metadata.uid == ref.uid
