"""Completed, Terminated, Failed (Volcano state/finished.go): terminal; any request only releases pods."""

from __future__ import annotations

from vc_job_controller.logic.draft import PlanDraft, Target
from vc_job_controller.logic.kill import RETAIN_SOFT, kill_job


def execute(plan: PlanDraft, action: str, target: Target | None) -> None:
    kill_job(plan, RETAIN_SOFT, None)
