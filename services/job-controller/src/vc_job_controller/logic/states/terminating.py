"""Terminating (Volcano state/terminating.go): kill all but finished pods; Terminated once none is alive."""

from __future__ import annotations

from vc_job_controller.logic.draft import PlanDraft, Target
from vc_job_controller.logic.kill import RETAIN_SOFT, kill_job
from vc_job_controller.logic.states.common import when_no_pod_alive
from vc_proto.vocabulary import JobPhase


def execute(plan: PlanDraft, action: str, target: Target | None) -> None:
    kill_job(plan, RETAIN_SOFT, when_no_pod_alive(JobPhase.TERMINATED, "JobTerminated", "all pods stopped"))
