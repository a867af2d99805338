"""drf: dominant resource fairness between jobs (Volcano drf.go).

A job's share is its largest fraction of any cluster resource; lower shares go first, and a task may
preempt another job's task when that leaves the preemptor's share no higher than the victim's. With
`enableHierarchy: true` queues are also ordered, and reclaimed from, by hierarchical DRF (hdrf.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Final

import numpy as np

from vc_sched_core.framework.interfaces import EventHandler, ExtensionPoint, PluginArgs
from vc_sched_core.framework.model import JobInfo, QueueInfo, TaskInfo
from vc_sched_core.framework.resources import Vector
from vc_sched_core.framework.session import Session
from vc_sched_core.plugins.hdrf import HdrfTree, queue_paths
from vc_sched_core.plugins.shares import ShareOf

NAME: Final = "drf"
SHARE_DELTA: Final = 1e-6


class DrfPlugin:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        self.hierarchical = bool((args or {}).get("enableHierarchy", False))
        self.total: Vector = np.zeros(0)
        self.share_of = ShareOf(self.total)
        self.allocated: dict[str, Vector] = {}
        self.shares: dict[str, float] = {}
        self.jobs: dict[str, JobInfo] = {}
        self.tree: HdrfTree | None = None
        self.paths: dict[str, tuple[list[str], list[float]]] = {}
        self.requests: dict[str, Vector] = {}
        self.total_allocated: Vector = np.zeros(0)

    def on_session_open(self, ssn: Session) -> None:
        self._build_shares(ssn)
        ssn.add_fn(ExtensionPoint.JOB_ORDER, NAME, self.job_order)
        ssn.add_fn(ExtensionPoint.PREEMPTABLE, NAME, self.preemptable)
        if self.hierarchical:
            self._build_tree(ssn)
            ssn.add_fn(ExtensionPoint.QUEUE_ORDER, NAME, self.queue_order)
            ssn.add_fn(ExtensionPoint.RECLAIMABLE, NAME, self.hierarchical_reclaimable)
        ssn.add_event_handler(EventHandler(allocate=self._on_allocate, deallocate=self._on_deallocate))

    def _build_shares(self, ssn: Session) -> None:
        """Each job's allocation (Σ requests of its allocated tasks, the job's own running sum) and its
        dominant share, for all jobs in one array operation."""
        self.total, self.jobs = ssn.total_resource, ssn.jobs
        self.share_of = ShareOf(self.total)
        jobs = list(ssn.jobs.values())
        if not jobs:
            return
        allocated = np.array([job.allocated for job in jobs], dtype=np.float64)
        for job, row, share in zip(jobs, allocated, self.share_of.of_rows(allocated), strict=True):
            self.allocated[job.uid] = row
            self.shares[job.uid] = share

    def _build_tree(self, ssn: Session) -> None:
        self.paths = queue_paths(ssn.queues)
        self.tree = HdrfTree(self.total)
        self.total_allocated = ssn.space.zeros()
        for job in ssn.jobs.values():
            self.requests[job.uid] = sum((t.resreq for t in job.tasks.values()), ssn.space.zeros())
            self.total_allocated += self.allocated[job.uid]
            self.tree.place(job.uid, self.allocated[job.uid], self.requests[job.uid], self.paths[job.queue])
        self.tree.update(self.total_allocated)

    def on_session_close(self, ssn: Session) -> None:
        ssn.job_shares = self.shares  # Volcano's volcano_job_share: each job's share as the session left it
        self.allocated, self.shares, self.jobs, self.tree = {}, {}, {}, None

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        lshare, rshare = self.shares.get(left.uid, 0.0), self.shares.get(right.uid, 0.0)
        return 0 if lshare == rshare else -1 if lshare < rshare else 1

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> list[TaskInfo]:
        mine = self.share_of(self.allocated[preemptor.job] + preemptor.resreq)
        remaining: dict[str, Vector] = {}
        victims = []
        for task in preemptees:
            left = remaining.setdefault(task.job, self.allocated[task.job].copy())
            left -= task.resreq
            theirs = self.share_of(left)
            if mine < theirs or abs(mine - theirs) <= SHARE_DELTA:
                victims.append(task)
        return victims

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        if self.tree is None:
            return 0
        result = self.tree.compare(self.paths[left.name][0], self.paths[right.name][0])
        return -1 if result < 0 else 1 if result > 0 else 0

    def hierarchical_reclaimable(self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> list[TaskInfo]:
        """A victim if, with the reclaimer's task moved in and the victim's out, the reclaimer's queue
        still compares lower (Volcano's HDRF reclaimFn on a cloned tree)."""
        if self.tree is None:
            return []
        tree, total = self.tree.clone(), self.total_allocated + reclaimer.resreq
        ljob = self.jobs[reclaimer.job]
        lpath = self.paths[ljob.queue]
        tree.place(ljob.uid, self.allocated[ljob.uid] + reclaimer.resreq, self.requests[ljob.uid], lpath)
        tree.update(total)
        victims = []
        for task in reclaimees:
            rjob = self.jobs[task.job]
            rpath = self.paths[rjob.queue]
            tree.place(rjob.uid, self.allocated[rjob.uid] - task.resreq, self.requests[rjob.uid], rpath)
            tree.update(total - task.resreq)
            if tree.compare(lpath[0], rpath[0]) < 0:
                victims.append(task)
            tree.place(rjob.uid, self.allocated[rjob.uid], self.requests[rjob.uid], rpath)
            tree.update(total)
        return victims

    def _on_allocate(self, task: TaskInfo) -> None:
        self._move(task, 1.0)

    def _on_deallocate(self, task: TaskInfo) -> None:
        self._move(task, -1.0)

    def _move(self, task: TaskInfo, sign: float) -> None:
        allocated = self.allocated.get(task.job)
        if allocated is None:
            return
        if sign > 0:  # (x + r, x - r: the same floats as x + r * sign, without the product)
            allocated += task.resreq
        else:
            allocated -= task.resreq
        self.shares[task.job] = self.share_of(allocated)
        if self.tree is not None:
            job = self.jobs[task.job]
            self.total_allocated += task.resreq * sign
            self.tree.place(job.uid, self.allocated[job.uid], self.requests[job.uid], self.paths[job.queue])
            self.tree.update(self.total_allocated)
