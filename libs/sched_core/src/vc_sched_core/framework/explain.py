"""Why a job is not placed, in sentences a user can act on (the PodGroup condition's "Why:" part).

Volcano's condition message says which predicates failed on how many nodes and what the first
rejecting plugin said. What a user needs first is whether waiting helps. So the gang is judged as a
whole, in whole units, and the blockers come in this order:
1. lasting ones, which no amount of waiting clears: the cluster (or its largest node) is too small
   for the job, a queue's capability is below what the job needs, its queue is not Open, no node
   matches its pods' node selector;
2. transient ones: how much the gang still waits for and who holds it, or the per-node shortfall
   when the cluster has enough in all but no node has room for a pod;
3. every rule that refused the job this cycle (enqueue's plugins, the queue checks of allocate), as
   the plugins said it.
Only what blocks is said: a resource the job has enough of is left out.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property

import numpy as np

from vc_sched_core.framework.fit_errors import NODE_SELECTOR_MISMATCH
from vc_sched_core.framework.model import ALLOCATED_STATUSES, JobInfo, QueueInfo, TaskInfo, TaskStatus
from vc_sched_core.framework.resources import Vector, format_units
from vc_sched_core.framework.session import Session


class Explainer:
    """Explains the jobs of one closing session. What every job's sentences compare against (the free
    and largest amounts, who holds each resource) is worked out once, not per job: a full cluster with
    thousands of waiting gangs would otherwise walk every job once per waiting one."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self._held: dict[int, dict[str, tuple[float, int]]] = {}

    def job(self, job: JobInfo) -> list[str]:
        """The sentences, most serious first; empty when there is nothing to add to Volcano's message.

        Once a lasting blocker is known, what the job would wait for is left out: waiting does not help."""
        ssn = self.ssn
        need, pods = _gang_need(job)
        lasting = [*self._too_small(job, need, pods), *_queue_limits(ssn, job, need), *_selector_mismatch(job)]
        transient: list[str] = []
        if not lasting:
            short = self._shortfall(job)
            transient = [sentence for sentence, _ in short]
            transient += _node_shortfalls(ssn, job, {name for _, name in short})
            transient += _refusals(job)
        rules = [reason for reason in dict.fromkeys(job.why.values()) if reason]
        return [*lasting, *transient, *rules]

    @cached_property
    def _free(self) -> Vector:
        ssn = self.ssn
        return np.clip(ssn.nodes.idle.sum(axis=0), 0, None) if len(ssn.nodes) else ssn.space.zeros()

    @cached_property
    def _largest(self) -> Vector | None:
        return self.ssn.nodes.allocatable.max(axis=0) if len(self.ssn.nodes) else None

    def _too_small(self, job: JobInfo, need: Vector, pods: int) -> list[str]:
        ssn = self.ssn
        tol = ssn.space.tolerance
        out = []
        over = np.flatnonzero((need > ssn.total_resource + tol) & (need > 0))
        if len(over):
            out.append(
                f"Needs {_amounts(ssn, need, over)} for {_pods(pods)}; the cluster has "
                f"{_amounts(ssn, ssn.total_resource, over)} in all: it can never run as submitted"
            )
        largest = self._largest
        if largest is None:
            return out
        for task in _one_per_class(job.tasks_in(TaskStatus.PENDING)):
            too_big = np.flatnonzero((task.resreq > largest + tol) & ~np.isin(np.arange(len(need)), over))
            if len(too_big):
                out.append(
                    f"Each pod like {task.name} needs {_amounts(ssn, task.resreq, too_big)}; the largest node has "
                    f"{_amounts(ssn, largest, too_big)}: it can never run as submitted"
                )
        return out

    def _shortfall(self, job: JobInfo) -> list[tuple[str, str]]:
        """(sentence, resource): how much the gang still waits for beyond what is free in all, and who
        holds it."""
        ssn = self.ssn
        tol, names = ssn.space.tolerance, ssn.space.names
        missing_pods = job.min_available - job.count(*ALLOCATED_STATUSES, TaskStatus.SUCCEEDED)
        if missing_pods <= 0:
            return []
        if job.min_resources is not None:
            wanted = np.where(job.min_resources_dims, np.clip(job.min_resources - job.allocated, 0, None), 0.0)
        else:
            pending = sorted(job.tasks_in(TaskStatus.PENDING), key=_task_order)[:missing_pods]
            if not pending:
                return []
            wanted = np.sum([t.resreq for t in pending], axis=0)
        free = self._free
        out = []
        for dim in np.flatnonzero((wanted > free + tol) & (wanted > 0)):
            name = names[dim]
            short = float(wanted[dim] - free[dim])
            sentence = (
                f"Waiting for {format_units(name, float(wanted[dim]))} {name}: {format_units(name, float(free[dim]))} "
                f"are free and {format_units(name, short)} more must be released{self._holders(job, int(dim))}"
            )
            out.append((sentence, name))
        return out

    def _holders(self, job: JobInfo, dim: int) -> str:
        """`; 30 are held by 4 running jobs in queue "a"` for the resource `dim`, by queue: every job's
        holding, counted once per session, less the job's own."""
        ssn = self.ssn
        tolerance = ssn.space.tolerance[dim]
        if dim not in self._held:
            totals: dict[str, tuple[float, int]] = {}
            for other in ssn.jobs.values():
                amount = float(other.allocated[dim])
                if amount > tolerance:
                    total, count = totals.get(other.queue, (0.0, 0))
                    totals[other.queue] = (total + amount, count + 1)
            self._held[dim] = totals
        held = dict(self._held[dim])
        own = float(job.allocated[dim])
        if own > tolerance and job.queue in held:
            total, count = held[job.queue]
            if count == 1:
                del held[job.queue]
            else:
                held[job.queue] = (total - own, count - 1)
        if not held:
            return ""
        name = ssn.space.names[dim]
        parts = [
            f'{format_units(name, amount)} by {count} running job{"" if count == 1 else "s"} in queue "{queue}"'
            for queue, (amount, count) in sorted(held.items(), key=lambda kv: -kv[1][0])
        ]
        return "; held: " + ", ".join(parts)


def _gang_need(job: JobInfo) -> tuple[Vector, int]:
    """What the gang needs in all to start, and for how many pods: minResources where it sets it,
    else the requests of minAvailable of its tasks."""
    if job.min_resources is not None:
        return np.where(job.min_resources_dims, job.min_resources, 0.0), job.min_available
    tasks = sorted(job.tasks.values(), key=_task_order)[: job.min_available]
    need = np.sum([t.resreq for t in tasks], axis=0) if tasks else np.zeros_like(job.allocated)
    return need, job.min_available


def _task_order(task: TaskInfo) -> tuple[bool, int, str]:
    return (task.index is None, task.index or 0, task.name)


def _pods(count: int) -> str:
    return f"{count} pod{'' if count == 1 else 's'}"


def _amounts(ssn: Session, vec: Vector, dims: Iterable[int]) -> str:
    names = ssn.space.names
    return " and ".join(f"{format_units(names[d], float(vec[d]))} {names[d]}" for d in dims)


def _one_per_class(tasks: Iterable[TaskInfo]) -> list[TaskInfo]:
    """One task of each template (tasks of one class share every node answer)."""
    seen: dict[bytes, TaskInfo] = {}
    for task in sorted(tasks, key=_task_order):
        seen.setdefault(task.class_key, task)
    return list(seen.values())


def _lineage(ssn: Session, name: str) -> list[QueueInfo]:
    """The queue and its ancestors (a hierarchy's capability binds at every level)."""
    out: list[QueueInfo] = []
    queue = ssn.queues.get(name)
    while queue is not None and queue not in out:
        out.append(queue)
        queue = ssn.queues.get(queue.spec.parent) if queue.spec.parent else None
    return out


def _queue_limits(ssn: Session, job: JobInfo, need: Vector) -> list[str]:
    out = []
    for queue in _lineage(ssn, job.queue):
        if queue.name == job.queue and not queue.is_open:
            out.append(
                f'Queue "{queue.name}" is {queue.spec.state}: nothing in it starts until it is opened '
                f"(vcctl queue operate -n {queue.name} -a open), or submit the job to an open queue"
            )
        capability = ssn.space.vector(queue.spec.capability, missing=float("inf"))
        capability[:2] = np.where(capability[:2] <= 0, float("inf"), capability[:2])  # Volcano: <= 0 is no limit
        over = np.flatnonzero((need > capability + ssn.space.tolerance) & (need > 0))
        if len(over):
            out.append(
                f'Queue "{queue.name}"\'s capability is {_amounts(ssn, capability, over)} and the job needs '
                f"{_amounts(ssn, need, over)}: raise the capability or shrink the job"
            )
    return out


def _selector_mismatch(job: JobInfo) -> list[str]:
    out = []
    for task in _one_per_class(job.tasks_in(TaskStatus.PENDING)):
        errors = job.nodes_fit_errors.get(task.uid)
        if errors is not None and errors.nodes and errors.reasons.get(NODE_SELECTOR_MISMATCH, 0) >= errors.nodes:
            out.append(
                f"No node matches the node selector or affinity of pods like {task.name}: "
                "change the selector or label a node"
            )
    return out


def _node_shortfalls(ssn: Session, job: JobInfo, said: set[str]) -> list[str]:
    """Per template, a resource no single node has enough of free (the cluster may have it in all)."""
    out = []
    for task in _one_per_class(job.tasks_in(TaskStatus.PENDING)):
        errors = job.nodes_fit_errors.get(task.uid)
        if errors is None:
            continue
        for name, (need, best) in sorted(errors.shortfalls.items()):
            tol = float(ssn.space.tolerance[ssn.space.index[name]]) if name in ssn.space.index else 0.0
            if name in said or need <= best + tol:
                continue  # enough somewhere, or already said: it blocks nothing by itself
            out.append(
                f"Each pod like {task.name} needs {format_units(name, need)} {name}, but no node has more than "
                f"{format_units(name, best)} free: waiting for running pods to end"
            )
    return out


def _refusals(job: JobInfo) -> list[str]:
    """Templates every node refuses for reasons other than resources (a selector is said above)."""
    out = []
    for task in _one_per_class(job.tasks_in(TaskStatus.PENDING)):
        errors = job.nodes_fit_errors.get(task.uid)
        if errors is None or errors.reasons.get(NODE_SELECTOR_MISMATCH, 0) >= errors.nodes > 0:
            continue
        other = sorted(r for r in errors.reasons if not r.startswith("Insufficient "))
        if other and not errors.shortfalls:
            out.append(f"Pods like {task.name} are refused by every node ({', '.join(other)})")
    return out
