"""When a finished job may be deleted: `ttlSecondsAfterFinished` after its last transition.

Durable by construction: the deadline is derived from stored fields (`status.state.lastTransitionTime`
and the TTL), never from when this process first saw the job, so a restart forgets no deadline and
shortens none. Pure: `now` is an argument.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final

from vc_proto.batch import Job
from vc_proto.vocabulary import JobPhase

FINISHED: Final = frozenset({JobPhase.COMPLETED, JobPhase.FAILED, JobPhase.TERMINATED})


def finished_phases(*, gc_aborted: bool = False) -> frozenset[JobPhase]:
    """Volcano collects Completed, Failed and Terminated; Aborted only when configured to."""
    return FINISHED | {JobPhase.ABORTED} if gc_aborted else FINISHED


def phase_of(job: Job) -> str:
    state = job.status.state if job.status else None
    return (state.phase if state else None) or ""


def ttl_of(job: Job) -> int | None:
    return job.spec.ttl_seconds_after_finished if job.spec else None


def is_collectable(job: Job, *, gc_aborted: bool = False) -> bool:
    """A TTL is set and the job has reached a phase gc collects."""
    return ttl_of(job) is not None and phase_of(job) in finished_phases(gc_aborted=gc_aborted)


def finished_at(job: Job) -> datetime | None:
    """`status.state.lastTransitionTime` as an aware datetime; None when absent or unreadable."""
    state = job.status.state if job.status else None
    text = state.last_transition_time if state else None
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def expired(job: Job, now: datetime, *, gc_aborted: bool = False) -> timedelta | None:
    """Time left before `job` may be deleted: `timedelta(0)` means now.

    None means gc does not delete the job as it stands: no TTL, not finished, or no finish time
    (Volcano: "unable to find the time when the Job finished"); a later change of the job brings it back.
    """
    ttl = ttl_of(job)
    finished = finished_at(job)
    if ttl is None or finished is None or not is_collectable(job, gc_aborted=gc_aborted):
        return None
    return max(timedelta(0), finished + timedelta(seconds=max(0, ttl)) - now)


def finished_in_future(job: Job, now: datetime) -> bool:
    """The finish time lies ahead of our clock: skew between clocks, so the deletion is deferred."""
    finished = finished_at(job)
    return finished is not None and finished > now
