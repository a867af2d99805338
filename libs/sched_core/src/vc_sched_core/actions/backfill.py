"""backfill: place best-effort tasks (no resource request) of admitted jobs (Volcano backfill.go)."""

from __future__ import annotations

from typing import ClassVar, Final

from vc_sched_core.framework.interfaces import PluginArgs
from vc_sched_core.framework.model import JobInfo, QueueInfo, TaskInfo, TaskStatus
from vc_sched_core.framework.node_search import find_feasible_nodes, select_best_node
from vc_sched_core.framework.ordering import PriorityQueue
from vc_sched_core.framework.session import Session

NAME: Final = "backfill"


class BackfillAction:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        self.args = dict(args or {})

    def execute(self, ssn: Session) -> None:
        for task in self._pending_best_effort(ssn):
            job = ssn.jobs[task.job]
            error = ssn.pre_predicate(task)
            if error:
                continue
            found = find_feasible_nodes(ssn, task)
            if found.fit_errors is not None:
                job.nodes_fit_errors[task.uid] = found.fit_errors
                continue
            ssn.allocate(task, select_best_node(ssn, task, found.rows))

    @staticmethod
    def _pending_best_effort(ssn: Session) -> list[TaskInfo]:
        """Best-effort Pending (and un-pipelined Pipelined) tasks, in queue, job, task order."""
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order)
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        for job in ssn.jobs_by_uid():
            queue = ssn.queue_of(job)
            if job.is_pending() or queue is None or not _has_best_effort(job):
                continue  # (a job without best-effort work would contribute nothing below)
            if queue.name not in jobs_by_queue:
                jobs_by_queue[queue.name] = PriorityQueue(ssn.job_order)
                queues.push(queue)
            jobs_by_queue[queue.name].push(job)
        ordered: list[TaskInfo] = []
        while not queues.empty():
            jobs = jobs_by_queue[queues.pop().name]
            while not jobs.empty():
                ordered.extend(_job_best_effort(ssn, jobs.pop()))
        return ordered


def _has_best_effort(job: JobInfo) -> bool:
    if job.pending_best_effort_num():  # kept up to date by the job
        return True
    pipelined = job.by_status.get(TaskStatus.PIPELINED)
    return pipelined is not None and any(t.best_effort for t in pipelined.values())


def _job_best_effort(ssn: Session, job: JobInfo) -> list[TaskInfo]:
    picked: list[TaskInfo] = []
    for task in job.tasks_in(TaskStatus.PIPELINED):
        if task.best_effort:
            ssn.set_task(task, TaskStatus.PENDING, "")  # un-pipeline: backfill places it for real
            ssn.fire_deallocate(task)
    for task in job.tasks_in(TaskStatus.PENDING):
        if task.best_effort:
            picked.append(task)
    tasks = PriorityQueue(ssn.task_order, sorted(picked, key=lambda t: t.uid))
    return [tasks.pop() for _ in range(len(tasks))]
