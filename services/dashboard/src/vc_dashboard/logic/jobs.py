"""Rows of the jobs list and the job page: phase, queue, and task counts from `status.taskStatusCount`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from vc_dashboard.logic.verdict import Verdict, pending_verdict
from vc_proto.batch import Job
from vc_proto.scheduling import PodGroup

TASK_PHASES: Final = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
FINISHED: Final = frozenset({"Completed", "Failed", "Aborted", "Terminated"})


@dataclass(frozen=True, slots=True)
class TaskRow:
    name: str
    replicas: int
    min_available: int
    counts: dict[str, int]


@dataclass(frozen=True, slots=True)
class JobRow:
    namespace: str
    name: str
    queue: str
    phase: str
    created: str
    min_available: int
    retry_count: int
    tasks: list[TaskRow]
    verdict: Verdict | None

    @property
    def replicas(self) -> int:
        return sum(t.replicas for t in self.tasks)

    @property
    def counts(self) -> dict[str, int]:
        return {phase: sum(t.counts.get(phase, 0) for t in self.tasks) for phase in TASK_PHASES}

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED


def job_phase(job: Job) -> str:
    status = job.status
    return (status.state.phase if status and status.state else None) or "Pending"


def job_queue(job: Job) -> str:
    return (job.spec.queue if job.spec else None) or "default"


def task_rows(job: Job) -> list[TaskRow]:
    counts = (job.status.task_status_count if job.status else None) or {}
    rows = []
    for task in (job.spec.tasks if job.spec else None) or []:
        name = task.name or ""
        phases = (counts[name].phase if name in counts else None) or {}
        replicas = task.replicas or 0
        minimum = task.min_available if task.min_available is not None else replicas
        rows.append(TaskRow(name, replicas, minimum, {p: phases.get(p, 0) for p in TASK_PHASES}))
    return rows


def job_row(job: Job, group: PodGroup | None) -> JobRow:
    spec, status = job.spec, job.status
    phase = job_phase(job)
    return JobRow(
        namespace=job.metadata.namespace or "",
        name=job.metadata.name or "",
        queue=job_queue(job),
        phase=phase,
        created=job.metadata.creation_timestamp or "",
        min_available=(status.min_available if status else None) or (spec.min_available if spec else None) or 0,
        retry_count=(status.retry_count if status else None) or 0,
        tasks=task_rows(job),
        verdict=pending_verdict(phase, group),
    )


@dataclass(frozen=True, slots=True)
class JobFilter:
    """What the jobs list shows; empty fields match every job."""

    namespace: str = ""
    queue: str = ""
    phase: str = ""

    def matches(self, job: Job) -> bool:
        return (
            (not self.namespace or job.metadata.namespace == self.namespace)
            and (not self.queue or job_queue(job) == self.queue)
            and (not self.phase or job_phase(job) == self.phase)
        )


def select_jobs(jobs: Iterable[Job], selection: JobFilter) -> list[Job]:
    """The matching jobs, newest first (what people look for), ties by namespace and name."""
    chosen = sorted(
        (job for job in jobs if selection.matches(job)),
        key=lambda job: (job.metadata.namespace or "", job.metadata.name or ""),
    )
    chosen.sort(key=lambda job: job.metadata.creation_timestamp or "", reverse=True)  # stable: ties keep names
    return chosen


def phase_counts(jobs: Iterable[Job]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for job in jobs:
        phase = job_phase(job)
        counts[phase] = counts.get(phase, 0) + 1
    return dict(sorted(counts.items()))
