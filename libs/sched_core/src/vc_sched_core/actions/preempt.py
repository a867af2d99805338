"""preempt: starving jobs evict lower-priority tasks of their own queue (Volcano preempt.go).

Between jobs: a starving job's pending tasks evict preemptable tasks of other jobs in the same queue;
the job's statement commits only if the job is then pipelined. Within a job: pending tasks evict
lower-priority tasks of the same job, committed task by task.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Final

import numpy as np

from vc_sched_core.actions.preempt_topology import ENABLE_KEY, CandidateLimits, topology_aware_preempt
from vc_sched_core.actions.victims import preemptor_fits_on_node, victims_can_make_room, victims_queue
from vc_sched_core.framework.conf import argument_bool
from vc_sched_core.framework.interfaces import PluginArgs
from vc_sched_core.framework.model import PREEMPTABLE_STATUSES, JobInfo, QueueInfo, TaskInfo, TaskStatus
from vc_sched_core.framework.node_search import sort_nodes_by_score
from vc_sched_core.framework.ordering import PriorityQueue
from vc_sched_core.framework.session import Session
from vc_sched_core.framework.statement import Statement

NAME: Final = "preempt"
PREEMPT_NEVER = "Never"
Filter = Callable[[TaskInfo], bool]


class PreemptAction:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        self.args = dict(args or {})
        # Volcano's enableTopologyAwarePreemption (off by default): kube-scheduler's dry-run preemption.
        enabled = argument_bool(self.args.get(ENABLE_KEY)) is True
        self.topology = CandidateLimits.from_args(self.args) if enabled else None

    def execute(self, ssn: Session) -> None:
        queues, starving = self._starving_jobs(ssn)
        for queue in queues:
            self._between_jobs(ssn, starving.get(queue.name))
            for job in [j for j in ssn.jobs.values() if j.queue == queue.name and ssn.job_starving(j)]:
                self._within_job(ssn, job)

    @staticmethod
    def _starving_jobs(ssn: Session) -> tuple[list[QueueInfo], dict[str, PriorityQueue[JobInfo]]]:
        queues: dict[str, QueueInfo] = {}
        starving: dict[str, PriorityQueue[JobInfo]] = {}
        for job in ssn.jobs_by_uid():
            queue = ssn.queue_of(job)
            if job.is_pending() or queue is None:
                continue
            queues.setdefault(queue.name, queue)
            if ssn.job_starving(job):
                starving.setdefault(queue.name, PriorityQueue(ssn.job_order)).push(job)
        ordered = PriorityQueue(ssn.queue_order, queues.values())
        return [ordered.pop() for _ in range(len(ordered))], starving

    def _between_jobs(self, ssn: Session, preemptors: PriorityQueue[JobInfo] | None) -> None:
        while preemptors is not None and not preemptors.empty():
            job = preemptors.pop()
            stmt = Statement(ssn)
            assigned = False
            tasks = _pending_tasks(ssn, job)
            while ssn.job_starving(job) and not tasks.empty():
                preemptor = tasks.pop()
                assigned |= preempt(ssn, stmt, preemptor, _other_jobs_in_queue(ssn, preemptor), self.topology)
            if not ssn.job_pipelined(job):
                stmt.discard()
                continue
            stmt.commit()
            if assigned:
                preemptors.push(job)

    def _within_job(self, ssn: Session, job: JobInfo) -> None:
        tasks = _pending_tasks(ssn, job)
        while not tasks.empty():
            preemptor = tasks.pop()
            stmt = Statement(ssn)
            assigned = preempt(ssn, stmt, preemptor, _same_job(preemptor), self.topology)
            stmt.commit()
            if not assigned:
                break


def _pending_tasks(ssn: Session, job: JobInfo) -> PriorityQueue[TaskInfo]:
    return PriorityQueue(ssn.task_order, sorted(job.tasks_in(TaskStatus.PENDING), key=lambda t: t.uid))


def _eligible(preemptor: TaskInfo, task: TaskInfo) -> bool:
    """Volcano's victim filter shared by both preemptions: a running or bound preemptable task, and a
    best-effort preemptor only evicts best-effort tasks (a best-effort victim is allowed)."""
    if task.status not in PREEMPTABLE_STATUSES or not task.preemptable:
        return False
    return not (preemptor.best_effort and not task.best_effort)


def _same_job(preemptor: TaskInfo) -> Filter:
    return lambda task: task.job == preemptor.job and _eligible(preemptor, task)


def _other_jobs_in_queue(ssn: Session, preemptor: TaskInfo) -> Filter:
    queue = ssn.jobs[preemptor.job].queue

    def candidate(task: TaskInfo) -> bool:
        job = ssn.jobs.get(task.job)
        if job is None or not _eligible(preemptor, task):
            return False
        return job.queue == queue and task.job != preemptor.job

    return candidate


def preempt(
    ssn: Session, stmt: Statement, preemptor: TaskInfo, candidate: Filter, topology: CandidateLimits | None = None
) -> bool:
    """Free one node for `preemptor` by evicting victims there, then pipeline it onto that node: on the
    best-scored node where evicting in victim order makes it fit, or, in topology-aware mode, on the
    node whose fewest necessary victims matter least (preempt_topology.py)."""
    if preemptor.preemption_policy == PREEMPT_NEVER or ssn.pre_predicate(preemptor):
        return False
    queue = ssn.queues[ssn.jobs[preemptor.job].queue]
    rows = ssn.predicate(preemptor, np.arange(len(ssn.nodes)), resolvable_pass=True).rows
    if topology is not None:
        nodes = [ssn.nodes.nodes[int(row)] for row in rows]
        return topology_aware_preempt(ssn, stmt, preemptor, candidate, nodes, topology)
    for node in sort_nodes_by_score(ssn, preemptor, rows):
        preemptees = [t for t in node.tasks.values() if candidate(t)]
        victims = ssn.preemptable(preemptor, preemptees)
        if not victims_can_make_room(ssn, preemptor, node, victims):
            continue
        node_stmt = Statement(ssn)
        order = victims_queue(ssn, victims, preemptor)
        while not order.empty() and not preemptor_fits_on_node(ssn, queue, preemptor, node):
            node_stmt.evict(order.pop(), "preempt")
        if preemptor_fits_on_node(ssn, queue, preemptor, node):
            node_stmt.pipeline(preemptor, node)
            stmt.merge(node_stmt)
            return True
        node_stmt.discard()
    return False
