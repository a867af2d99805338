"""One module per job phase (Volcano `pkg/controllers/job/state`); `state_for` is its factory.go."""

from __future__ import annotations

from collections.abc import Callable

from vc_job_controller.logic.draft import PlanDraft, Target
from vc_job_controller.logic.states import (
    aborted,
    aborting,
    completing,
    finished,
    pending,
    restarting,
    running,
    terminating,
)
from vc_proto.vocabulary import JobPhase

State = Callable[[PlanDraft, str, Target | None], None]

_BY_PHASE: dict[str, State] = {
    JobPhase.PENDING: pending.execute,
    JobPhase.RUNNING: running.execute,
    JobPhase.RESTARTING: restarting.execute,
    JobPhase.TERMINATED: finished.execute,
    JobPhase.COMPLETED: finished.execute,
    JobPhase.FAILED: finished.execute,
    JobPhase.TERMINATING: terminating.execute,
    JobPhase.ABORTING: aborting.execute,
    JobPhase.ABORTED: aborted.execute,
    JobPhase.COMPLETING: completing.execute,
}


def state_for(phase: str) -> State:
    """The state executing actions in `phase`; an empty or unknown phase behaves as Pending."""
    return _BY_PHASE.get(phase, pending.execute)
