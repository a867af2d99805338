"""reclaim: starving jobs take back resources from other, reclaimable queues (Volcano reclaim.go).

Per queue (QueueOrder) a starving job tries its pending tasks: on each node, Running preemptable tasks
of jobs in other reclaimable queues are offered to the Reclaimable plugins; victims are evicted until
the task fits, and the task is pipelined there. The job's statement commits only if the job is then
pipelined (gang-safe), else it is discarded.
"""

from __future__ import annotations

from typing import ClassVar, Final

import numpy as np

from vc_sched_core.actions.victims import fits_future_idle, victims_can_make_room, victims_queue
from vc_sched_core.framework.interfaces import PluginArgs
from vc_sched_core.framework.model import JobInfo, QueueInfo, TaskInfo, TaskStatus
from vc_sched_core.framework.nodes import NodeInfo
from vc_sched_core.framework.ordering import PriorityQueue
from vc_sched_core.framework.session import Session
from vc_sched_core.framework.statement import Statement

NAME: Final = "reclaim"


class ReclaimAction:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        self.args = dict(args or {})

    def execute(self, ssn: Session) -> None:
        queues, starving = self._starving_jobs(ssn)
        while not queues.empty():
            queue = queues.pop()
            jobs = starving.get(queue.name)
            if ssn.overused(queue) or jobs is None or jobs.empty():
                continue
            job = jobs.pop()
            if self._reclaim_for_job(ssn, job, queue) and ssn.job_starving(job):
                jobs.push(job)
            queues.push(queue)

    @staticmethod
    def _starving_jobs(ssn: Session) -> tuple[PriorityQueue[QueueInfo], dict[str, PriorityQueue[JobInfo]]]:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order)
        seen: set[str] = set()
        starving: dict[str, PriorityQueue[JobInfo]] = {}
        for job in ssn.jobs_by_uid():
            queue = ssn.queue_of(job)
            if job.is_pending() or queue is None:
                continue
            if queue.name not in seen:
                seen.add(queue.name)
                queues.push(queue)
            if ssn.job_starving(job):
                starving.setdefault(queue.name, PriorityQueue(ssn.job_order)).push(job)
        return queues, starving

    def _reclaim_for_job(self, ssn: Session, job: JobInfo, queue: QueueInfo) -> bool:
        stmt = Statement(ssn)
        tasks = PriorityQueue(ssn.task_order, sorted(job.tasks_in(TaskStatus.PENDING), key=lambda t: t.uid))
        assigned = False
        while ssn.job_starving(job) and not tasks.empty():
            task = tasks.pop()
            if task.preemption_policy == "Never" or not ssn.preemptive(queue, task):
                continue
            if ssn.pre_predicate(task):
                continue
            assigned |= self._reclaim_for_task(ssn, stmt, task, job)
        if assigned and ssn.job_pipelined(job):
            stmt.commit()
            return True
        stmt.discard()
        return False

    @staticmethod
    def _reclaim_for_task(ssn: Session, stmt: Statement, task: TaskInfo, job: JobInfo) -> bool:
        rows = ssn.predicate(task, np.arange(len(ssn.nodes)), resolvable_pass=True).rows
        for row in rows:
            node = ssn.nodes.nodes[int(row)]
            reclaimees = _reclaimees(ssn, node, job)
            if not reclaimees:
                continue
            victims = ssn.reclaimable(task, reclaimees)
            if not victims_can_make_room(ssn, task, node, victims):
                continue
            node_stmt = Statement(ssn)
            order = victims_queue(ssn, victims, task)
            while not order.empty() and not fits_future_idle(ssn, task, node):
                node_stmt.evict(order.pop(), "reclaim")
            if fits_future_idle(ssn, task, node):
                node_stmt.pipeline(task, node)
                stmt.merge(node_stmt)
                return True
            node_stmt.discard()
        return False


def _reclaimees(ssn: Session, node: NodeInfo, job: JobInfo) -> list[TaskInfo]:
    """Running, preemptable tasks of jobs in other queues that allow reclaiming (best-effort ones too,
    as in Volcano: they hold no resources a reclaimer needs, so the plugins and the room check decide)."""
    out: list[TaskInfo] = []
    for task in node.tasks.values():
        owner = ssn.jobs.get(task.job)
        if owner is None or task.status != TaskStatus.RUNNING or not task.preemptable:
            continue
        if owner.queue != job.queue and ssn.queues[owner.queue].reclaimable():
            out.append(task)
    return out
