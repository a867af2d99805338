"""Running (Volcano state/running.go): finish, fail or fall back to Pending by the pods' phases (rule R)."""

from __future__ import annotations

from vc_job_controller.logic.draft import PlanDraft, Target
from vc_job_controller.logic.states.common import run_lifecycle_action
from vc_job_controller.logic.status import StatusDraft, UpdateStatus
from vc_job_controller.logic.sync import sync_job
from vc_job_controller.logic.view import job_min_available, tasks, total_replicas, total_task_min_available
from vc_proto.batch import JobSpec
from vc_proto.vocabulary import JobPhase, PodPhase


def execute(plan: PlanDraft, action: str, target: Target | None) -> None:
    if not run_lifecycle_action(plan, action, target):
        sync_job(plan, follow_pods(plan.view.spec))


def follow_pods(spec: JobSpec) -> UpdateStatus:
    def update(draft: StatusDraft) -> None:
        total = total_replicas(spec)
        if total == 0:
            return  # scaled to zero: keep the phase
        min_success = spec.min_success
        if min_success is not None and draft.succeeded >= min_success:
            message = f"{draft.succeeded} pods succeeded, minSuccess is {min_success}"
            draft.move_to(JobPhase.COMPLETED, "MinSuccessReached", message)
        elif draft.succeeded + draft.failed == total:
            _all_finished(spec, draft, total)
        elif draft.pending > total - job_min_available(spec):
            message = (
                f"{draft.pending} pods pending, more than replicas - minAvailable = {total - job_min_available(spec)}"
            )
            draft.move_to(JobPhase.PENDING, "PodsPending", message)

    return update


def _all_finished(spec: JobSpec, draft: StatusDraft, total: int) -> None:
    """Every pod ended: Completed or Failed by task minAvailable, minSuccess and job minAvailable."""
    short_task = _task_short_of_min_available(spec, draft)
    min_success, min_available = spec.min_success, job_min_available(spec)
    if short_task is not None:
        draft.move_to(JobPhase.FAILED, "TaskMinAvailableNotMet", short_task)
    elif min_success is not None and draft.succeeded < min_success:
        message = f"{draft.succeeded} of {total} pods succeeded, minSuccess is {min_success}"
        draft.move_to(JobPhase.FAILED, "MinSuccessNotMet", message)
    elif draft.succeeded >= min_available:
        message = f"{draft.succeeded} of {total} pods succeeded, minAvailable is {min_available}"
        draft.move_to(JobPhase.COMPLETED, "PodsSucceeded", message)
    else:
        message = f"only {draft.succeeded} of {total} pods succeeded, minAvailable is {min_available}"
        draft.move_to(JobPhase.FAILED, "MinAvailableNotMet", message)


def _task_short_of_min_available(spec: JobSpec, draft: StatusDraft) -> str | None:
    """When the job's minAvailable covers every task's, a task with too few successes fails the job."""
    if job_min_available(spec) < total_task_min_available(spec):
        return None
    for task in tasks(spec):
        counts = draft.task_status_count.get(task.name or "")
        if task.min_available is None or counts is None:
            continue
        succeeded = counts.get(PodPhase.SUCCEEDED, 0)
        if succeeded < task.min_available:
            return f"task {task.name}: {succeeded} pods succeeded, task minAvailable is {task.min_available}"
    return None
