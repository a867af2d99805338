"""KillJob and KillTarget (Volcano's killPods): delete pods, recount, run plugins' OnJobDelete.

A full kill (no target) bumps `status.version` so events of the killed pods only trigger SyncJob,
and deletes the PodGroup; a targeted kill (task, pod, partition) keeps it. Deleted pods are first
marked out of sync. Volcano does not count the pods it keeps; Tephra does (they are Succeeded or
Failed, or outside the target, so no phase rule changes, and the job keeps an honest count).
Tephra also skips the version bump when a full kill finds nothing left to delete (pods already
terminating were deleted, and counted, by the kill that bumped it): Volcano bumps on every event of
a finished or stopping job, which with a status-driven watch would be a write loop.
"""

from __future__ import annotations

from typing import Final

from vc_job_controller.logic import history
from vc_job_controller.logic.draft import PlanDraft, Target, TargetType
from vc_job_controller.logic.plan import PodDeletion
from vc_job_controller.logic.podgroup import PARTITION_ID_KEY
from vc_job_controller.logic.status import StatusDraft, UpdateStatus
from vc_job_controller.logic.transitions import pod_event
from vc_job_controller.logic.view import is_deleting, max_retry, pod_is_terminating, pod_phase
from vc_proto.core import Pod
from vc_proto.vocabulary import PodPhase

RETAIN_NONE: Final[frozenset[str]] = frozenset()
RETAIN_SOFT: Final[frozenset[str]] = frozenset({PodPhase.SUCCEEDED, PodPhase.FAILED})


def kill_job(plan: PlanDraft, retain: frozenset[str], update: UpdateStatus | None) -> None:
    _kill_pods(plan, retain=retain, target=None, update=update)


def kill_target(plan: PlanDraft, target: Target, update: UpdateStatus | None) -> None:
    _kill_pods(plan, retain=RETAIN_NONE, target=target, update=update)


def _kill_pods(plan: PlanDraft, *, retain: frozenset[str], target: Target | None, update: UpdateStatus | None) -> None:
    view = plan.view
    if is_deleting(view.job):
        return
    victims = _target_victims(plan, target) if target else _job_victims(plan, retain)
    if target is not None and target.type == TargetType.PARTITION and not victims:
        return  # Volcano skips the whole kill when the partition has no pods
    draft = StatusDraft.of(view.status)
    plan.status, plan.killed = draft, True
    draft.reset_counts()
    if target is None and victims:
        draft.version += 1
    for name, pod in sorted(view.pods.items()):
        if name in victims or pod_is_terminating(pod):
            _kill(plan, draft, pod)
        else:
            draft.count(pod)
    if update is not None:
        update(draft)
    for plugin in plan.plugins:
        plan.apply_effects(plugin.on_job_delete(view.job, dict(draft.controlled)), draft)
    if target is None and view.podgroup is not None:
        plan.podgroup_to_delete = view.podgroup.metadata.name


def is_last_retry(plan: PlanDraft) -> bool:
    """On the last retry Volcano keeps Succeeded and Failed pods whatever the retain set says."""
    return (plan.view.status.retry_count or 0) >= max_retry(plan.view.spec) - 1


def _job_victims(plan: PlanDraft, retain: frozenset[str]) -> set[str]:
    keep = RETAIN_SOFT if is_last_retry(plan) else retain
    return {name for name, pod in plan.view.pods.items() if not pod_is_terminating(pod) and pod_phase(pod) not in keep}


def _target_victims(plan: PlanDraft, target: Target) -> set[str]:
    pods = plan.view.pods_by_task().get(target.task_name, {})
    if target.type == TargetType.POD:
        return {target.pod_name} if target.pod_name in pods else set()
    if target.type == TargetType.PARTITION:
        return {n for n, p in pods.items() if (p.metadata.labels or {}).get(PARTITION_ID_KEY) == target.partition}
    return set(pods)


def _kill(plan: PlanDraft, draft: StatusDraft, pod: Pod) -> None:
    draft.terminating += 1
    if pod_is_terminating(pod):
        return
    name = pod.metadata.name or ""
    plan.pods_to_delete.append(
        PodDeletion(name=name, uid=pod.metadata.uid or "", mark_out_of_sync=True, reason=plan.action)
    )
    plan.events.append(
        pod_event(plan, pod, reason=history.POD_DELETED, phase=pod_phase(pod) or None, message=plan.cause)
    )
