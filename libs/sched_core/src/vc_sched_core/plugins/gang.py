"""gang: all-or-nothing jobs (Volcano gang.go).

Valid only with enough tasks; ready when minAvailable tasks are placed; not-ready jobs go first;
evictions keep every victim job at minAvailable. At session close it writes the PodGroup's
Unschedulable or Scheduled condition in Volcano's wording, followed by a plain-language "Why"
(explain.py; vc_core.why_pending puts it first wherever a person reads it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Final

from vc_core.why_pending import condition_message
from vc_proto.vocabulary import PodGroupConditionType, PodGroupPhase
from vc_sched_core.framework.explain import Explainer
from vc_sched_core.framework.interfaces import ExtensionPoint, PluginArgs, ValidateResult, Verdict, Vote
from vc_sched_core.framework.model import ALLOCATED_STATUSES, JobInfo, TaskInfo, TaskStatus
from vc_sched_core.framework.session import Session
from vc_sched_core.snapshot.cluster import PodGroupCondition

NAME: Final = "gang"
NOT_ENOUGH_RESOURCES: Final = "NotEnoughResources"
NOT_ENOUGH_TASKS: Final = "NotEnoughTasks"
NOT_ENOUGH_PODS_OF_TASK: Final = "NotEnoughPodsOfTask"
READY_REASON: Final = "tasks in gang are ready to be scheduled"
SCHEDULED: Final = PodGroupConditionType.SCHEDULED
UNSCHEDULABLE: Final = PodGroupConditionType.UNSCHEDULABLE


class GangPlugin:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        self.jobs: dict[str, JobInfo] = {}

    def on_session_open(self, ssn: Session) -> None:
        self.jobs = ssn.jobs
        P = ExtensionPoint
        ssn.add_fn(P.JOB_VALID, NAME, self.job_valid)
        ssn.add_fn(P.PREEMPTABLE, NAME, self.keep_min_available)
        ssn.add_fn(P.RECLAIMABLE, NAME, self.keep_min_available)
        ssn.add_fn(P.JOB_ORDER, NAME, self.job_order)
        ssn.add_fn(P.JOB_READY, NAME, self.job_ready)
        ssn.add_fn(P.JOB_PIPELINED, NAME, self.job_pipelined)
        ssn.add_fn(P.JOB_STARVING, NAME, self.job_starving)

    @staticmethod
    def job_valid(job: JobInfo) -> ValidateResult | None:
        if not job.check_task_valid():
            return ValidateResult(
                False, NOT_ENOUGH_PODS_OF_TASK, "Not enough valid pods of each task for gang-scheduling"
            )
        valid = job.valid_task_num()
        if valid < job.min_available:
            message = f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {job.min_available}"
            return ValidateResult(False, NOT_ENOUGH_TASKS, message)
        return None

    def keep_min_available(self, _actor: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        """A victim job may lose tasks only while it keeps more than minAvailable ready ones."""
        occupied: dict[str, int] = {}
        victims = []
        for task in candidates:
            job = self.jobs[task.job]
            occupied.setdefault(job.uid, job.ready_task_num())
            if occupied[job.uid] > job.min_available:
                occupied[job.uid] -= 1
                victims.append(task)
        return victims

    @staticmethod
    def job_order(left: JobInfo, right: JobInfo) -> int:
        """Jobs not yet ready first."""
        left_ready, right_ready = left.is_ready(), right.is_ready()
        if left_ready == right_ready:
            return 0
        return 1 if left_ready else -1

    @staticmethod
    def job_ready(job: JobInfo) -> bool:
        return job.check_task_ready() and job.is_ready()

    @staticmethod
    def job_pipelined(job: JobInfo) -> Verdict:
        occupied = job.waiting_task_num() + job.ready_task_num() + job.pending_best_effort_num()
        if job.check_task_pipelined() and occupied >= job.min_available:
            return Verdict(Vote.PERMIT)
        return Verdict(Vote.REJECT)

    @staticmethod
    def job_starving(job: JobInfo) -> bool:
        return job.waiting_task_num() + job.ready_task_num() < job.min_available

    def on_session_close(self, ssn: Session) -> None:
        explainer = Explainer(ssn)
        for job in ssn.jobs.values():
            if job.is_ready():
                ssn.update_podgroup_condition(job, PodGroupCondition(SCHEDULED, "True", READY_REASON, "", ssn.uid))
                waited = job.conditions.get(UNSCHEDULABLE)
                if waited is not None and waited.status == "True":
                    # Conditions agree with the phase: a scheduled gang is no longer unschedulable.
                    ssn.update_podgroup_condition(
                        job, PodGroupCondition(UNSCHEDULABLE, "False", "Scheduled", "", ssn.uid)
                    )
                continue
            if job.still_scheduled_while_terminating() or job.uid in ssn.deferred:
                continue  # (a deferred job was not tried: there is nothing to say of it yet)
            if job.tasks:  # Volcano's volcano_job_retry_counts: one more session that left it unready
                ssn.retried_jobs.append(job.uid)
            invalid = ssn.job_valid(job) if job.phase == PodGroupPhase.INQUEUE else None
            if invalid is not None:
                # Enqueued this session before its pods exist (a vcjob's are created once it is Inqueue):
                # say so as the sessions after this one will (framework's invalid-job check at open)
                # rather than "10/0 tasks in gang unschedulable", which one of them would only replace.
                ssn.mark_invalid(job, invalid)
                continue
            volcano = unschedulable_message(job)
            job.job_fit_errors = volcano
            message = condition_message(volcano, explainer.job(job))
            condition = PodGroupCondition(UNSCHEDULABLE, "True", NOT_ENOUGH_RESOURCES, message, ssn.uid)
            ssn.update_podgroup_condition(job, condition)
        self.jobs = {}


def unschedulable_message(job: JobInfo) -> str:
    """`<M>/<N> tasks in gang unschedulable: <FitError()>` with Volcano's M."""
    schedulable = sum(
        1 for task in job.tasks_in(TaskStatus.PENDING) if (task.last_tx_status or task.status) in ALLOCATED_STATUSES
    )
    missing = job.min_available - (schedulable + job.ready_task_num())
    return f"{missing}/{len(job.tasks)} tasks in gang unschedulable: {fit_error(job)}"


def fit_error(job: JobInfo) -> str:
    """Volcano JobInfo.FitError(): status histogram, pending reasons, then the first task's node errors."""
    histogram = {str(status): len(tasks) for status, tasks in job.by_status.items() if tasks}
    histogram["minAvailable"] = job.min_available
    ready = "pod group is ready" if job.is_ready() else "pod group is not ready"
    message = f"{ready}, {', '.join(sorted(f'{n} {name}' for name, n in histogram.items()))}"
    pending = sorted(job.tasks_in(TaskStatus.PENDING), key=lambda t: (t.index is None, t.index or 0, t.name))
    reasons: dict[str, int] = {}
    for task in pending:
        last = task.last_tx_status
        reason = "Schedulable" if last in (TaskStatus.ALLOCATED, TaskStatus.PIPELINED) else "Unschedulable"
        reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        message += f"; Pending: {', '.join(sorted(f'{n} {r}' for r, n in reasons.items()))}"
    origin = next((t for t in pending if t.uid in job.nodes_fit_errors), None)
    if origin is not None:
        message += f". Origin reason is {origin.name}: {job.nodes_fit_errors[origin.uid].error()}"
    return message
