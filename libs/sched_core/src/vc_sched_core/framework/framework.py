"""OpenSession / CloseSession (Volcano framework.go): build a session, run plugin hooks, write statuses."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from functools import partial

import numpy as np

from vc_proto.vocabulary import PodGroupConditionType
from vc_sched_core.framework.carried import CarriedState
from vc_sched_core.framework.conf import SchedulerConf
from vc_sched_core.framework.decisions import PodGroupStatusUpdate, QueueStatusUpdate
from vc_sched_core.framework.interfaces import Plugin, PluginFactory, ValidateResult
from vc_sched_core.framework.model import (
    ALLOCATED_STATUSES,
    COMPLETED_STATUSES,
    JobInfo,
    PodGroupPhase,
    TaskStatus,
)
from vc_sched_core.framework.registry import Registry
from vc_sched_core.framework.resources import format_amount
from vc_sched_core.framework.session import Session
from vc_sched_core.framework.session_cluster import remember_snapshot
from vc_sched_core.snapshot.cluster import ROOT_QUEUE, ClusterSnapshot

UNSCHEDULABLE = PodGroupConditionType.UNSCHEDULABLE
SCHEDULER_NAMES = ("volcano",)  # the pods' schedulerName a session schedules, unless told others


def open_session(
    snapshot: ClusterSnapshot,
    conf: SchedulerConf,
    *,
    plugins: Registry[PluginFactory],
    now: datetime | None,
    uid: str,
    scheduler_names: Iterable[str] = SCHEDULER_NAMES,
    timed: Callable[[str, Callable[[], None]], None] = lambda _name, fn: fn(),
    carried: CarriedState | None = None,
) -> tuple[Session, list[Plugin]]:
    """A session on `snapshot`. With `carried` (held by the caller between cycles) it opens on the state the
    previous session left, patched to this snapshot; the caller closes it after the session."""
    opening, journal = (carried or CarriedState(keep=False)).opening(snapshot, scheduler_names)
    ssn = Session(
        uid=uid,
        conf=conf,
        space=opening.space,
        nodes=opening.nodes,
        jobs=opening.jobs,
        queues=opening.queues,
        priority_classes=opening.classes,
        now=now,
        journal=journal,
    )
    ssn.pods_relate = opening.pods_relate
    if snapshot.outside is not None:
        ssn.take_outside(snapshot.outside)
    remember_snapshot(ssn, snapshot)
    instances: list[Plugin] = []
    for tier in conf.tiers:
        for option in tier.plugins:
            # Plugins get their `arguments` plus the option's own flags (capacity reads enableHierarchy).
            plugin = plugins[option.name]({**option.arguments, **option.flags})
            timed(f"plugin:{option.name}:open", partial(plugin.on_session_open, ssn))
            instances.append(plugin)
    _drop_invalid_jobs(ssn)
    return ssn, instances


def _drop_invalid_jobs(ssn: Session) -> None:
    """Jobs failing JobValid leave the session with an Unschedulable condition.

    A PodGroup that has not been enqueued yet stays: a vcjob's pods are only created once its
    PodGroup is Inqueue, so gang validity cannot hold before then. Volcano's allocate, backfill,
    preempt and reclaim all skip pending jobs before they ask JobValid, and its OpenSession check runs
    before any plugin registers, so enqueue sees every pending job.
    """
    for job in list(ssn.jobs.values()):
        if job.is_pending():  # Pending, or no phase yet (a PodGroup its creator stored without a status)
            continue
        result = _opening_validity(ssn, job)
        if result is None:
            continue
        # Volcano keeps such a job in the session (every action skips it) and its gang writes no
        # Unschedulable condition for one whose pods are only terminating: it stays Running.
        if not job.still_scheduled_while_terminating():
            ssn.mark_invalid(job, result)
        ssn.invalid_jobs[job.uid] = ssn.jobs.pop(job.uid)


def _opening_validity(ssn: Session, job: JobInfo) -> ValidateResult | None:
    """ssn.job_valid as the job opens, memoised on the job for the conf it was asked under (the JobValid
    functions are the conf's plugins'; the job opens the same every cycle while carried unchanged)."""
    memo = job.opening_memo.get("framework.valid")
    if memo is not None and memo[0] is ssn.conf:  # the conf object itself is held: its id is not reused
        return memo[1]  # type: ignore[no-any-return]
    result = ssn.job_valid(job)
    job.opening_memo["framework.valid"] = (ssn.conf, result)
    return result


def close_session(
    ssn: Session,
    plugins: Sequence[Plugin],
    *,
    timed: Callable[[str, Callable[[], None]], None] = lambda _name, fn: fn(),
    report: Callable[[str], bool] | None = None,
) -> tuple[dict[str, PodGroupStatusUpdate], list[QueueStatusUpdate]]:
    """Plugins close; the PodGroup statuses (of the PodGroups `report` names, default all) and the
    queues' allocations to write."""
    for plugin in plugins:
        timed(f"plugin:{plugin.name}:close", partial(plugin.on_session_close, ssn))
    jobs = {**ssn.jobs, **ssn.invalid_jobs}
    statuses = {uid: podgroup_status(ssn, job) for uid, job in sorted(jobs.items()) if report is None or report(uid)}
    return statuses, queue_statuses(ssn)


def podgroup_phase(ssn: Session, job: JobInfo) -> str:
    """Volcano jobStatus: Unknown / Running / Completed / Inqueue / Pending."""
    by_status = job.by_status
    unschedulable = job.conditions.get(UNSCHEDULABLE)
    failed_now = unschedulable is not None and unschedulable.status == "True" and unschedulable.transition_id == ssn.uid
    if failed_now and by_status.get(TaskStatus.RUNNING):
        return PodGroupPhase.UNKNOWN
    scheduled = job.scheduled_task_num() + job.releasing_scheduled_num()
    if scheduled >= job.min_available and scheduled > 0:
        completed = job.count(*COMPLETED_STATUSES)
        return PodGroupPhase.COMPLETED if completed == scheduled else PodGroupPhase.RUNNING
    return PodGroupPhase.INQUEUE if job.phase == PodGroupPhase.INQUEUE else PodGroupPhase.PENDING


def podgroup_status(ssn: Session, job: JobInfo) -> PodGroupStatusUpdate:
    by_status = job.by_status
    return PodGroupStatusUpdate(
        podgroup=job.uid,
        phase=podgroup_phase(ssn, job),
        conditions=tuple(job.conditions.values()),
        running=len(by_status.get(TaskStatus.RUNNING, ())),
        succeeded=len(by_status.get(TaskStatus.SUCCEEDED, ())),
        failed=len(by_status.get(TaskStatus.FAILED, ())),
    )


def queue_statuses(ssn: Session) -> list[QueueStatusUpdate]:
    """status.allocated per queue: Σ requests of allocated tasks, propagated to ancestors and root.

    Each job's allocation is kept as its tasks move (JobInfo.allocated); a queue's is the sum of its jobs'.
    """
    index = {name: i for i, name in enumerate(ssn.queues)}
    direct = np.zeros((len(index), ssn.space.size), dtype=np.float64)
    jobs = [job for job in ssn.jobs.values() if job.queue in index and job.count(*ALLOCATED_STATUSES)]
    if jobs:
        rows = np.fromiter((index[job.queue] for job in jobs), dtype=np.intp, count=len(jobs))
        np.add.at(direct, rows, np.array([job.allocated for job in jobs], dtype=np.float64))
    for queue, extra in ssn.queue_allocated_extra.items():
        if queue in index:
            direct[index[queue]] = np.maximum(direct[index[queue]] + extra, 0.0)
    for queue, sums in ssn.outside_queues.items():
        if queue in index:
            direct[index[queue]] += sums.allocated
    allocated = {name: ssn.space.zeros() for name in ssn.queues}
    for name, i in index.items():
        if direct[i].any():
            for ancestor in _lineage(ssn, name):
                allocated[ancestor] += direct[i]
    return [
        QueueStatusUpdate(name, {n: format_amount(n, float(v)) for n, v in zip(ssn.space.names, vec, strict=True)})
        for name, vec in sorted(allocated.items())
    ]


def _lineage(ssn: Session, name: str) -> list[str]:
    """The queue, its ancestors through `spec.parent`, and `root` (cycles and unknown parents stop)."""
    chain = [name]
    while chain[-1] != ROOT_QUEUE:
        parent = ssn.queues[chain[-1]].spec.parent or ROOT_QUEUE
        if parent not in ssn.queues or parent in chain:
            break
        chain.append(parent)
    return chain
