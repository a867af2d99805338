"""Why a job is pending: the scheduler's latest Unschedulable verdict on its PodGroup.

The scheduler keeps Volcano's message and adds what blocked the gang and by how much (`Why: queue
"team"'s capability is ...`); the page shows that first (vc_core.why_pending). A verdict is shown only
while the job waits: once it runs or finishes, an old Unschedulable condition no longer explains anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from vc_core.why_pending import readable
from vc_proto.scheduling import PodGroup
from vc_proto.vocabulary import PodGroupConditionType

UNSCHEDULABLE: Final = PodGroupConditionType.UNSCHEDULABLE
WAITING_JOB_PHASES: Final = frozenset({"", "Pending", "Restarting"})
WAITING_GROUP_PHASES: Final = frozenset({"", "Pending", "Inqueue"})


@dataclass(frozen=True, slots=True)
class Verdict:
    reason: str
    message: str
    since: str


def latest_unschedulable(group: PodGroup | None) -> Verdict | None:
    conditions = (group.status.conditions if group and group.status else None) or []
    current = [c for c in conditions if c.type == UNSCHEDULABLE and c.status == "True"]
    if not current:
        return None
    latest = max(current, key=lambda c: c.last_transition_time or "")
    return Verdict(
        reason=latest.reason or UNSCHEDULABLE,
        message=readable(latest.message or ""),
        since=latest.last_transition_time or "",
    )


def pending_verdict(job_phase: str, group: PodGroup | None) -> Verdict | None:
    """The verdict while the job (and its PodGroup) still waits to be placed; None otherwise."""
    group_phase = (group.status.phase if group and group.status else None) or ""
    if job_phase not in WAITING_JOB_PHASES or group_phase not in WAITING_GROUP_PHASES:
        return None
    return latest_unschedulable(group)
