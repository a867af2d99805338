"""Aborting (Volcano state/aborting.go): kill all but finished pods; Aborted once none is alive."""

from __future__ import annotations

from vc_job_controller.logic.draft import PlanDraft, Target
from vc_job_controller.logic.kill import RETAIN_SOFT, kill_job
from vc_job_controller.logic.states.common import restart, when_no_pod_alive
from vc_proto.vocabulary import Action, JobPhase


def execute(plan: PlanDraft, action: str, target: Target | None) -> None:
    if action == Action.RESUME_JOB:
        kill_job(plan, RETAIN_SOFT, restart(plan))
    else:
        kill_job(plan, RETAIN_SOFT, when_no_pod_alive(JobPhase.ABORTED, "JobAborted", "all pods stopped"))
