"""drf: dominant resource fairness between jobs (Volcano drf.go, without hierarchy).

A job's share is its largest fraction of any cluster resource; lower shares go first, and a task may
preempt another job's task when that leaves the preemptor's share no higher than the victim's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Final

import numpy as np

from vc_scheduler.framework.interfaces import EventHandler, ExtensionPoint, PluginArgs
from vc_scheduler.framework.model import ALLOCATED_STATUSES, JobInfo, TaskInfo, TaskStatus
from vc_scheduler.framework.resources import Vector
from vc_scheduler.framework.session import Session

NAME: Final = "drf"
SHARE_DELTA: Final = 1e-6


def dominant_share(allocated: Vector, total: Vector) -> float:
    """max_r allocated/total; a resource the cluster lacks counts 1 if used, else 0 (Volcano Share)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(total > 0, allocated / np.where(total > 0, total, 1), np.where(allocated > 0, 1.0, 0.0))
    return float(ratios.max()) if ratios.size else 0.0


class DrfPlugin:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        self.total: Vector = np.zeros(0)
        self.allocated: dict[str, Vector] = {}
        self.shares: dict[str, float] = {}

    def on_session_open(self, ssn: Session) -> None:
        self._build_shares(ssn)
        ssn.add_fn(ExtensionPoint.JOB_ORDER, NAME, self.job_order)
        ssn.add_fn(ExtensionPoint.PREEMPTABLE, NAME, self.preemptable)
        ssn.add_event_handler(EventHandler(allocate=self._on_allocate, deallocate=self._on_deallocate))

    def _build_shares(self, ssn: Session) -> None:
        self.total = ssn.total_resource
        for job in ssn.jobs.values():
            placed = ssn.space.zeros()
            for task in job.tasks.values():
                if task.status in ALLOCATED_STATUSES or task.status == TaskStatus.PIPELINED:
                    placed += task.resreq
            self.allocated[job.uid] = placed
            self.shares[job.uid] = dominant_share(placed, self.total)

    def on_session_close(self, ssn: Session) -> None:
        self.allocated, self.shares = {}, {}

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        lshare, rshare = self.shares.get(left.uid, 0.0), self.shares.get(right.uid, 0.0)
        return 0 if lshare == rshare else -1 if lshare < rshare else 1

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> list[TaskInfo]:
        mine = dominant_share(self.allocated[preemptor.job] + preemptor.resreq, self.total)
        remaining: dict[str, Vector] = {}
        victims = []
        for task in preemptees:
            left = remaining.setdefault(task.job, self.allocated[task.job].copy())
            left -= task.resreq
            theirs = dominant_share(left, self.total)
            if mine < theirs or abs(mine - theirs) <= SHARE_DELTA:
                victims.append(task)
        return victims

    def _on_allocate(self, task: TaskInfo) -> None:
        self._move(task, 1.0)

    def _on_deallocate(self, task: TaskInfo) -> None:
        self._move(task, -1.0)

    def _move(self, task: TaskInfo, sign: float) -> None:
        if task.job not in self.allocated:
            return
        self.allocated[task.job] += task.resreq * sign
        self.shares[task.job] = dominant_share(self.allocated[task.job], self.total)
