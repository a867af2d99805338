"""A job admission would refuse (it reached the store some other way): the controller creates nothing
for it, and says why once, in its status and in its history.

The phase is left as it is (a new job keeps none, so once the job is fixed it is initiated as usual);
`status.state` carries reason `Invalid` and the violations, and a condition and a history event record
the same. A job refused for the same reasons again yields an empty plan: nothing is written twice.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from msgspec.structs import replace

from vc_core.times import rfc3339
from vc_job_controller.logic.history import JOB_KIND, HistoryEvent
from vc_job_controller.logic.plan import Plan
from vc_proto.batch import Job, JobCondition, JobState, JobStatus
from vc_proto.vocabulary import JobPhase

INVALID: Final = "Invalid"


def is_refused_for(job: Job, message: str) -> bool:
    state = job.status.state if job.status else None
    return state is not None and state.reason == INVALID and state.message == message


def plan_refusal(job: Job, message: str, now: datetime) -> Plan:
    """`message` says what admission would refuse (field: message; ...)."""
    if is_refused_for(job, message):
        return Plan()
    status = job.status or JobStatus()
    state = status.state or JobState()
    at = rfc3339(now)
    shown_phase = state.phase or JobPhase.PENDING
    conditions = [c for c in status.conditions or [] if c.status != shown_phase]
    conditions.append(JobCondition(status=shown_phase, last_transition_time=at, reason=INVALID, message=message))
    new_state = JobState(
        phase=state.phase, reason=INVALID, message=message, last_transition_time=state.last_transition_time or at
    )
    name = job.metadata.name or ""
    event = HistoryEvent(
        occurred_at=at,
        kind=JOB_KIND,
        namespace=job.metadata.namespace or "",
        name=name,
        reason=INVALID,
        message=f"not acted on: {message}",
        job=name,
        uid=job.metadata.uid,
        phase=shown_phase,
    )
    return Plan(status=replace(status, state=new_state, conditions=conditions), events=(event,))
