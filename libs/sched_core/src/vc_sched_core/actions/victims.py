"""Helpers shared by preempt and reclaim: validating victims and ordering them for eviction."""

from __future__ import annotations

import numpy as np

from vc_sched_core.framework.model import QueueInfo, TaskInfo
from vc_sched_core.framework.nodes import NodeInfo
from vc_sched_core.framework.ordering import PriorityQueue
from vc_sched_core.framework.resources import less_equal
from vc_sched_core.framework.session import Session


def victims_can_make_room(ssn: Session, preemptor: TaskInfo, node: NodeInfo, victims: list[TaskInfo]) -> bool:
    """Volcano ValidateVictims: some victims, and future idle plus all of them holds the request,
    the pod itself included (each victim gives back one of the node's `pods`)."""
    if not victims:
        return False
    room = ssn.nodes.future_idle[node.row].copy()
    for victim in victims:
        room += victim.resreq
    pods_room = ssn.nodes.future_free_pods(node) + len(victims)
    return pods_room >= 1 and less_equal(preemptor.resreq, room, ssn.space.tolerance)


def victims_queue(ssn: Session, victims: list[TaskInfo], preemptor: TaskInfo) -> PriorityQueue[TaskInfo]:
    """Volcano BuildVictimsPriorityQueue: the first popped is the first to evict."""
    preemptor_queue = ssn.queues[ssn.jobs[preemptor.job].queue]

    def first_to_evict(left: TaskInfo, right: TaskInfo) -> bool:
        if left.job == right.job:
            return not ssn.task_order(left, right)
        left_job, right_job = ssn.jobs.get(left.job), ssn.jobs.get(right.job)
        if left_job is None:
            return True
        if right_job is None:
            return False
        if left_job.queue != right_job.queue:
            return ssn.victim_queue_order(ssn.queues[left_job.queue], ssn.queues[right_job.queue], preemptor_queue)
        return not ssn.job_order(left_job, right_job)

    return PriorityQueue(first_to_evict, sorted(victims, key=lambda t: t.uid))


def fits_future_idle(ssn: Session, task: TaskInfo, node: NodeInfo) -> bool:
    """The task's request and the pod itself fit the node once its releasing tasks are gone (Volcano
    counts `pods` as a resource here, so a best-effort pod blocked only by the node's pod limit makes
    room by evicting)."""
    fits = less_equal(task.resreq, ssn.nodes.future_idle[node.row], ssn.space.tolerance)
    return fits and ssn.nodes.future_free_pods(node) >= 1


def preemptor_fits_on_node(ssn: Session, queue: QueueInfo, task: TaskInfo, node: NodeInfo) -> bool:
    """Volcano preemptorFitsOnNode: the queue allows it, the node's future idle holds it, and every
    predicate passes there; so victims are evicted until, say, the pod an anti-affinity term forbids
    is gone, not only until the resources fit."""
    return (
        ssn.allocatable(queue, task).ok
        and fits_future_idle(ssn, task, node)
        and bool(ssn.predicate(task, np.array([node.row])).rows.size)
    )
