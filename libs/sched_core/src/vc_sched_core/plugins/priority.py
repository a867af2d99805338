"""priority: order jobs and tasks by priority; lower-priority work is preemptable (Volcano priority.go)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Final

from vc_sched_core.framework.interfaces import ExtensionPoint, PluginArgs
from vc_sched_core.framework.model import JobInfo, TaskInfo
from vc_sched_core.framework.session import Session

NAME: Final = "priority"


def compare_desc(left: int, right: int) -> int:
    """-1 when `left` should go first (higher value), 1 when later, 0 when equal."""
    return -1 if left > right else 1 if left < right else 0


class PriorityPlugin:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        self.jobs: dict[str, JobInfo] = {}

    def on_session_open(self, ssn: Session) -> None:
        self.jobs = ssn.jobs
        ssn.add_fn(ExtensionPoint.TASK_ORDER, NAME, self.task_order)
        ssn.add_fn(ExtensionPoint.JOB_ORDER, NAME, self.job_order)
        ssn.add_fn(ExtensionPoint.PREEMPTABLE, NAME, self.preemptable)
        ssn.add_fn(ExtensionPoint.JOB_STARVING, NAME, self.job_starving)

    def on_session_close(self, ssn: Session) -> None:
        self.jobs = {}

    @staticmethod
    def task_order(left: TaskInfo, right: TaskInfo) -> int:
        return compare_desc(left.priority, right.priority)

    @staticmethod
    def job_order(left: JobInfo, right: JobInfo) -> int:
        return compare_desc(left.priority, right.priority)

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Other jobs: only jobs of lower priority; same job: only tasks of lower priority."""
        preemptor_job = self.jobs[preemptor.job]
        victims = []
        for preemptee in preemptees:
            if preemptee.job != preemptor.job:
                if self.jobs[preemptee.job].priority >= preemptor_job.priority:
                    continue
            elif preemptee.priority >= preemptor.priority:
                continue
            victims.append(preemptee)
        return victims

    @staticmethod
    def job_starving(job: JobInfo) -> bool:
        return job.is_starving()
