"""overcommit: admit jobs while the cluster, inflated by a factor, still has room (Volcano overcommit.go).

idle = total * overcommit-factor - Σ node used; a job is enqueueable when everything already admitted
but unplaced plus its minResources fits in idle, on the resources it names.
"""

from __future__ import annotations

from typing import ClassVar, Final

import numpy as np

from vc_sched_core.framework.interfaces import ExtensionPoint, PluginArgs, Verdict, Vote
from vc_sched_core.framework.model import ALLOCATED_STATUSES, JobInfo, PodGroupPhase
from vc_sched_core.framework.resources import ResourceSpace, Vector, format_units
from vc_sched_core.framework.session import Session

NAME: Final = "overcommit"
DEFAULT_FACTOR: Final = 1.2


def overcommit_factor(args: PluginArgs) -> float:
    try:
        factor = float(args.get("overcommit-factor", DEFAULT_FACTOR))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return DEFAULT_FACTOR
    return factor if factor >= 1.0 else DEFAULT_FACTOR


def unplaced_min_resources(job: JobInfo) -> Vector | None:
    """What an admitted job still reserves: minResources minus what it has allocated."""
    if job.min_resources is None:
        return None
    admitted = job.phase == PodGroupPhase.INQUEUE or (
        job.phase == PodGroupPhase.RUNNING and job.count(*ALLOCATED_STATUSES) >= job.min_available
    )
    if not admitted:
        return None
    return np.where(job.min_resources_dims, np.clip(job.min_resources - job.allocated, 0, None), 0.0)


_UNSET: Final = object()


def _opening_unplaced(job: JobInfo) -> Vector | None:
    """unplaced_min_resources as the job opens, memoised on the job (it opens the same every cycle while
    carried unchanged); a fully placed job reserves nothing and is left out of the sum."""
    memo = job.opening_memo.get("overcommit.unplaced", _UNSET)
    if memo is _UNSET:
        memo = unplaced_min_resources(job)
        if memo is not None and not memo.any():
            memo = None  # adding zeros changes no float: skip the addition
        elif memo is not None:
            memo.flags.writeable = False
        job.opening_memo["overcommit.unplaced"] = memo
    return memo  # type: ignore[no-any-return]


class OvercommitPlugin:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        self.factor = overcommit_factor(dict(args or {}))
        self.space: ResourceSpace | None = None
        self.idle: Vector = np.zeros(0)
        self.inqueue: Vector = np.zeros(0)

    def on_session_open(self, ssn: Session) -> None:
        self._build(ssn)
        ssn.add_fn(ExtensionPoint.JOB_ENQUEUEABLE, NAME, self.job_enqueueable)
        ssn.add_fn(ExtensionPoint.JOB_ENQUEUED, NAME, self.job_enqueued)

    def _build(self, ssn: Session) -> None:
        self.space = ssn.space
        self.idle = ssn.total_resource * self.factor - ssn.nodes.used.sum(axis=0) - ssn.outside_used
        self.inqueue = ssn.space.zeros()
        for sums in ssn.outside_queues.values():
            self.inqueue += sums.reserved
        for job in ssn.jobs.values():
            reserved = _opening_unplaced(job)
            if reserved is not None:
                self.inqueue += reserved

    def on_session_close(self, ssn: Session) -> None:
        self.space = None

    def job_enqueueable(self, job: JobInfo) -> Verdict:
        if job.min_resources is None or self.space is None:
            return Verdict(Vote.PERMIT)
        future = self.inqueue + job.min_resources
        over = (future > self.idle + self.space.tolerance) & job.min_resources_dims & (job.min_resources > 0)
        if not over.any():
            return Verdict(Vote.PERMIT)
        names = [self.space.names[d] for d in np.flatnonzero(over)]
        detail = "; ".join(
            f"{n}: admitted but unplaced {format_units(n, float(self.inqueue[d]))} + minResources "
            f"{format_units(n, float(job.min_resources[d]))} > cluster idle x{self.factor:g} "
            f"{format_units(n, max(float(self.idle[d]), 0.0))}"
            for n, d in zip(names, np.flatnonzero(over), strict=True)
        )
        return Verdict(Vote.REJECT, f"resource in cluster is overused: overused {', '.join(names)} ({detail})")

    def job_enqueued(self, job: JobInfo) -> None:
        if job.min_resources is not None:
            self.inqueue += np.where(job.min_resources_dims, np.clip(job.min_resources - job.allocated, 0, None), 0.0)
