"""Restarting (Volcano state/restarting.go): kill, then Pending again, or Failed past maxRetry (rule RS)."""

from __future__ import annotations

from vc_job_controller.logic.draft import PlanDraft, Target
from vc_job_controller.logic.kill import RETAIN_NONE, kill_job, kill_target
from vc_job_controller.logic.states.common import RESTART_TARGET_ACTIONS
from vc_job_controller.logic.status import StatusDraft, UpdateStatus
from vc_job_controller.logic.sync import sync_job
from vc_job_controller.logic.view import max_retry, total_replicas
from vc_proto.vocabulary import Action, JobPhase


def execute(plan: PlanDraft, action: str, target: Target | None) -> None:
    update = restart_or_fail(plan)
    if action == Action.SYNC_JOB:
        sync_job(plan, update)
    elif action in RESTART_TARGET_ACTIONS and target is not None:
        kill_target(plan, target, update)
    else:
        kill_job(plan, RETAIN_NONE, update)


def restart_or_fail(plan: PlanDraft) -> UpdateStatus:
    spec = plan.view.spec

    def update(draft: StatusDraft) -> None:
        limit = max_retry(spec)
        if draft.retry_count >= limit:
            message = f"restarted {draft.retry_count} times, maxRetry is {limit}"
            draft.move_to(JobPhase.FAILED, "MaxRetryExceeded", message)
            return
        released = total_replicas(spec) - draft.terminating
        if released >= draft.min_available:
            message = f"restart {draft.retry_count} of {limit}: old pods released, starting again"
            draft.move_to(JobPhase.PENDING, "Restarted", message)

    return update
