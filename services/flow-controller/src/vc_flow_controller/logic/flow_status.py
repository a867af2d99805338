"""A JobFlow's status from its jobs (Volcano's `getAllJobStatus` and the flow state machine). Pure.

Jobs are listed by phase (`pendingJobs`, `runningJobs`, `completedJobs`, `failedJobs`,
`terminatedJobs`; a phase Volcano does not list, e.g. Aborted or Restarting, goes to `unKnowJobs`;
Completing and Terminating are counted but listed nowhere, as in Volcano). `jobStatusList` keeps one
entry per job ever seen, with its phase history (`runningHistories`: a new entry whenever the phase
changes, stamped `now`, the newest 64 kept); `conditions` maps each job to its phase, creation time,
running duration and per-task pod counts.

The flow's phase moves as Volcano's states move it: Pending -> Running once a job runs or completes
with none failed; Running -> Succeed once every flow's job is Completed; Pending or Running ->
Failed once a job is Failed or Terminated. Succeed keeps its phase; Failed (and Terminating) are
final: nothing is created for a Failed flow and its status is no longer written.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import msgspec

from vc_core.durations import parse_duration
from vc_core.errors import InvalidObject
from vc_core.times import rfc3339
from vc_flow_controller.logic.owners import phase_of
from vc_flow_controller.logic.times import parse_time
from vc_proto.batch import Job
from vc_proto.flow import FlowCondition, FlowJobStatus, FlowPhase, FlowState, JobFlow, JobFlowStatus, JobRunningHistory
from vc_proto.vocabulary import JobPhase

LISTED = (
    JobPhase.PENDING,
    JobPhase.RUNNING,
    JobPhase.COMPLETING,
    JobPhase.COMPLETED,
    JobPhase.TERMINATING,
    JobPhase.TERMINATED,
    JobPhase.FAILED,
)
FINAL_FLOW_PHASES = frozenset({FlowPhase.FAILED.value, FlowPhase.TERMINATING.value})
# Phase changes kept per job (the newest): a job restarted without end must not grow the flow's status
# without bound (Volcano keeps them all).
MAX_RUNNING_HISTORIES = 64


def flow_phase(flow: JobFlow) -> str:
    return (flow.status.state.phase if flow.status and flow.status.state else None) or ""


def is_final(flow: JobFlow) -> bool:
    return flow_phase(flow) in FINAL_FLOW_PHASES


def flow_status(flow: JobFlow, jobs: Sequence[Job], now: datetime) -> JobFlowStatus:
    """The status to write after a sync of a flow that is not final (see `is_final`)."""
    ordered = sorted(jobs, key=lambda job: job.metadata.name or "")
    by_phase: dict[str, list[str]] = {phase.value: [] for phase in LISTED}
    unknown: list[str] = []
    for job in ordered:
        by_phase.get(phase_of(job), unknown).append(job.metadata.name or "")
    old = flow.status or JobFlowStatus()
    status = JobFlowStatus(
        pending_jobs=by_phase[JobPhase.PENDING],
        running_jobs=by_phase[JobPhase.RUNNING],
        failed_jobs=by_phase[JobPhase.FAILED],
        completed_jobs=by_phase[JobPhase.COMPLETED],
        terminated_jobs=by_phase[JobPhase.TERMINATED],
        un_know_jobs=unknown,
        job_status_list=_job_status_list(old.job_status_list or [], ordered, now),
        conditions={job.metadata.name or "": _condition(job) for job in ordered},
        state=old.state,
    )
    phase = next_phase(flow_phase(flow), status, flows=len(flow.spec.flows or []) if flow.spec else 0)
    return _with_phase(status, phase)


def next_phase(phase: str, status: JobFlowStatus, *, flows: int) -> str:
    running, completed = len(status.running_jobs or []), len(status.completed_jobs or [])
    failed, terminated = len(status.failed_jobs or []), len(status.terminated_jobs or [])
    if phase in ("", FlowPhase.PENDING):
        if (running > 0 or completed > 0) and failed == 0:
            return FlowPhase.RUNNING.value
        if failed > 0 or terminated > 0:
            return FlowPhase.FAILED.value
        return FlowPhase.PENDING.value
    if phase == FlowPhase.RUNNING:
        if completed == flows:
            return FlowPhase.SUCCEED.value
        if failed > 0 or terminated > 0:
            return FlowPhase.FAILED.value
    return phase


def _with_phase(status: JobFlowStatus, phase: str) -> JobFlowStatus:
    if status.state is not None and status.state.phase == phase:
        return status
    return msgspec.structs.replace(status, state=FlowState(phase=phase))


def _condition(job: Job) -> FlowCondition:
    status = job.status
    return FlowCondition(
        phase=phase_of(job) or None,
        create_time=job.metadata.creation_timestamp,
        running_duration=status.running_duration if status else None,
        task_status_count=status.task_status_count if status else None,
    )


def _job_status_list(old: Sequence[FlowJobStatus], jobs: Sequence[Job], now: datetime) -> list[FlowJobStatus]:
    """Entries of jobs gone since stay (Volcano keeps them); each present job's entry is replaced."""
    entries = {entry.name or "": entry for entry in old}
    for job in jobs:
        name = job.metadata.name or ""
        entries[name] = FlowJobStatus(
            name=name,
            state=phase_of(job) or None,
            start_timestamp=job.metadata.creation_timestamp,
            end_timestamp=_end(job),
            restart_count=(job.status.retry_count if job.status else None) or 0,
            running_histories=_histories(entries.get(name), phase_of(job), now),
        )
    return list(entries.values())


def _end(job: Job) -> str | None:
    created = parse_time(job.metadata.creation_timestamp)
    duration = job.status.running_duration if job.status else None
    if created is None or not duration:
        return None
    try:
        return rfc3339(created + timedelta(seconds=parse_duration(duration, field="runningDuration")))
    except InvalidObject:
        return None


def _histories(entry: FlowJobStatus | None, phase: str, now: datetime) -> list[JobRunningHistory] | None:
    histories = list(entry.running_histories or []) if entry is not None else []
    if not phase or (histories and histories[-1].state == phase):
        return histories or None
    stamp = rfc3339(now)
    if histories:
        last = histories[-1]
        histories[-1] = JobRunningHistory(start_timestamp=last.start_timestamp, end_timestamp=stamp, state=last.state)
    histories.append(JobRunningHistory(start_timestamp=stamp, state=phase))
    return histories[-MAX_RUNNING_HISTORIES:]
