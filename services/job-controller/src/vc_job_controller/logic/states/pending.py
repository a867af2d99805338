"""Pending (Volcano state/pending.go): waiting for the gang; Running once minAvailable pods run or ended."""

from __future__ import annotations

from vc_job_controller.logic.draft import PlanDraft, Target
from vc_job_controller.logic.states.common import run_lifecycle_action
from vc_job_controller.logic.status import StatusDraft, UpdateStatus
from vc_job_controller.logic.sync import sync_job
from vc_job_controller.logic.view import job_min_available
from vc_proto.vocabulary import JobPhase


def execute(plan: PlanDraft, action: str, target: Target | None) -> None:
    if not run_lifecycle_action(plan, action, target):
        sync_job(plan, start_when_gang_ready(plan))


def start_when_gang_ready(plan: PlanDraft) -> UpdateStatus:
    min_available = job_min_available(plan.view.spec)

    def update(draft: StatusDraft) -> None:
        started = draft.running + draft.succeeded + draft.failed
        if min_available <= started:
            message = f"{started} pods running or finished, minAvailable is {min_available}"
            draft.move_to(JobPhase.RUNNING, "MinAvailableReached", message)

    return update
