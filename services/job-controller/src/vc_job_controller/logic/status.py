"""The job status being computed: a mutable draft, then the new frozen JobStatus.

Volcano's state functions receive `*JobStatus` and mutate it (UpdateStatusFn). The draft plays that
role inside one pure `decide` call. Tephra also records why a phase changed: `reason` and `message`
go to `status.state` and to the condition appended for the new phase.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from msgspec.structs import replace

from vc_core.times import parse_rfc3339, rfc3339
from vc_job_controller.logic.durations import format_go_duration
from vc_job_controller.logic.view import phase_of, pod_phase, task_of_pod
from vc_proto.batch import JobCondition, JobState, JobStatus, TaskState
from vc_proto.core import Pod
from vc_proto.vocabulary import PodPhase

_COUNTED = (PodPhase.PENDING, PodPhase.RUNNING, PodPhase.SUCCEEDED, PodPhase.FAILED)


@dataclass(slots=True)
class StatusDraft:
    phase: str
    reason: str | None = None
    message: str | None = None
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    version: int = 0
    retry_count: int = 0
    min_available: int = 0
    task_status_count: dict[str, dict[str, int]] = field(default_factory=dict)
    controlled: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, status: JobStatus) -> StatusDraft:
        state = status.state or JobState()
        return cls(
            phase=phase_of(status),
            reason=state.reason,
            message=state.message,
            pending=status.pending or 0,
            running=status.running or 0,
            succeeded=status.succeeded or 0,
            failed=status.failed or 0,
            terminating=status.terminating or 0,
            unknown=status.unknown or 0,
            version=status.version or 0,
            retry_count=status.retry_count or 0,
            min_available=status.min_available or 0,
            task_status_count={t: dict(s.phase or {}) for t, s in (status.task_status_count or {}).items()},
            controlled=dict(status.controlled_resources or {}),
        )

    def reset_counts(self) -> None:
        self.pending = self.running = self.succeeded = self.failed = self.terminating = self.unknown = 0
        self.task_status_count = {}

    def count(self, pod: Pod) -> None:
        """classifyAndAddUpPodBaseOnPhase + calcPodStatus."""
        phase = pod_phase(pod)
        bucket = phase if phase in _COUNTED else str(PodPhase.UNKNOWN)
        attribute = bucket.lower()
        setattr(self, attribute, getattr(self, attribute) + 1)
        per_task = self.task_status_count.setdefault(task_of_pod(pod), {})
        per_task[bucket] = per_task.get(bucket, 0) + 1

    def count_created(self, pod: Pod) -> None:
        """A pod just created is Pending (the API server defaults its phase)."""
        self.pending += 1
        per_task = self.task_status_count.setdefault(task_of_pod(pod), {})
        pending = str(PodPhase.PENDING)
        per_task[pending] = per_task.get(pending, 0) + 1

    @property
    def alive(self) -> int:
        return self.terminating + self.pending + self.running

    def move_to(self, phase: str, reason: str, message: str) -> None:
        self.phase, self.reason, self.message = phase, reason, message


# Volcano's UpdateStatusFn: mutate the draft (phase, reason, retryCount...).
UpdateStatus = Callable[[StatusDraft], None]


def _conditions(old: JobStatus, draft: StatusDraft, at: str) -> list[JobCondition]:
    """appendJobCondition: drop any condition of the new phase, append a fresh one."""
    kept = [c for c in old.conditions or [] if c.status != draft.phase]
    return [
        *kept,
        JobCondition(status=draft.phase, last_transition_time=at, reason=draft.reason, message=draft.message),
    ]


def _task_counts(draft: StatusDraft) -> dict[str, TaskState] | None:
    counts = {
        task: TaskState(phase=dict(sorted(phases.items()))) for task, phases in sorted(draft.task_status_count.items())
    }
    return counts or None


def finalize(old: JobStatus, draft: StatusDraft, *, now: datetime) -> JobStatus:
    """The new status; a phase change stamps lastTransitionTime and appends a condition."""
    state = old.state or JobState()
    conditions = old.conditions
    if draft.phase != phase_of(old):
        at = rfc3339(now)
        state = JobState(phase=draft.phase, reason=draft.reason, message=draft.message, last_transition_time=at)
        conditions = _conditions(old, draft, at)
    return replace(
        old,
        state=state,
        conditions=conditions,
        pending=draft.pending,
        running=draft.running,
        succeeded=draft.succeeded,
        failed=draft.failed,
        terminating=draft.terminating,
        unknown=draft.unknown,
        version=draft.version,
        retry_count=draft.retry_count,
        min_available=draft.min_available,
        task_status_count=_task_counts(draft),
        controlled_resources=dict(sorted(draft.controlled.items())) or None,
    )


def running_duration(status: JobStatus, created: str | None) -> str | None:
    """Volcano's runningDuration, set on kills: lastTransitionTime - creationTimestamp."""
    last = status.state.last_transition_time if status.state else None
    if not last or not created:
        return status.running_duration
    return format_go_duration(parse_rfc3339(last) - parse_rfc3339(created))


def changed(old: JobStatus, new: JobStatus) -> bool:
    """Whether `new` differs from `old` once absent counters are read as zero."""
    return finalize(old, StatusDraft.of(old), now=datetime.min) != new


def counts_only(old: JobStatus, new: JobStatus) -> bool:
    """Whether `new` differs from `old` in pod counts alone (the phase, its reason, the version, the
    retry count and every other field the same)."""
    base = finalize(old, StatusDraft.of(old), now=datetime.min)
    recounted = replace(
        new,
        pending=base.pending,
        running=base.running,
        succeeded=base.succeeded,
        failed=base.failed,
        terminating=base.terminating,
        unknown=base.unknown,
        task_status_count=base.task_status_count,
    )
    return recounted == base and new != base
