"""Status updates shared by several states (Volcano repeats these closures in every state file)."""

from __future__ import annotations

from vc_job_controller.logic.draft import PlanDraft, Target
from vc_job_controller.logic.kill import RETAIN_NONE, RETAIN_SOFT, kill_job, kill_target
from vc_job_controller.logic.status import StatusDraft, UpdateStatus
from vc_proto.vocabulary import Action, JobPhase

RESTART_TARGET_ACTIONS = frozenset({Action.RESTART_TASK, Action.RESTART_POD, Action.RESTART_PARTITION})
# Actions that end or pause the job, and the phase each leads to.
STOPPING_PHASE: dict[str, str] = {
    Action.ABORT_JOB: JobPhase.ABORTING,
    Action.COMPLETE_JOB: JobPhase.COMPLETING,
    Action.TERMINATE_JOB: JobPhase.TERMINATING,
}


def move_to(plan: PlanDraft, phase: str) -> UpdateStatus:
    """Enter `phase` because of the action being executed (reason = the action, message = its cause)."""

    def update(draft: StatusDraft) -> None:
        draft.move_to(phase, plan.action, plan.cause)

    return update


def restart(plan: PlanDraft) -> UpdateStatus:
    """Restart actions and ResumeJob: one more retry, then Restarting."""

    def update(draft: StatusDraft) -> None:
        draft.retry_count += 1
        draft.move_to(JobPhase.RESTARTING, plan.action, plan.cause)

    return update


def run_lifecycle_action(plan: PlanDraft, action: str, target: Target | None) -> bool:
    """The action table Pending and Running share; False when `action` is not in it (then SyncJob)."""
    if action == Action.RESTART_JOB:
        kill_job(plan, RETAIN_NONE, restart(plan))
    elif action in RESTART_TARGET_ACTIONS and target is not None:
        kill_target(plan, target, restart(plan))
    elif action in STOPPING_PHASE:
        kill_job(plan, RETAIN_SOFT, move_to(plan, STOPPING_PHASE[action]))
    else:
        return False
    return True


def when_no_pod_alive(phase: str, reason: str, message: str) -> UpdateStatus:
    """Aborting/Completing/Terminating: move on once nothing is terminating, pending or running."""

    def update(draft: StatusDraft) -> None:
        if draft.alive == 0:
            draft.move_to(phase, reason, message)

    return update
