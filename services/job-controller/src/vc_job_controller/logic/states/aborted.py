"""Aborted (Volcano state/aborted.go): stays until ResumeJob restarts it."""

from __future__ import annotations

from vc_job_controller.logic.draft import PlanDraft, Target
from vc_job_controller.logic.kill import RETAIN_SOFT, kill_job
from vc_job_controller.logic.states.common import restart
from vc_proto.vocabulary import Action


def execute(plan: PlanDraft, action: str, target: Target | None) -> None:
    kill_job(plan, RETAIN_SOFT, restart(plan) if action == Action.RESUME_JOB else None)
