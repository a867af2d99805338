"""SyncJob (Volcano's syncJob): initiate the job, keep its PodGroup, reconcile its pods, count them."""

from __future__ import annotations

from vc_job_controller.logic import history
from vc_job_controller.logic.dependson import dependencies_met
from vc_job_controller.logic.draft import PlanDraft
from vc_job_controller.logic.names import pod_name, podgroup_name
from vc_job_controller.logic.plan import PodDeletion
from vc_job_controller.logic.podgroup import build_podgroup, updated_podgroup
from vc_job_controller.logic.pods import build_job_pod, is_out_of_sync
from vc_job_controller.logic.status import StatusDraft, UpdateStatus
from vc_job_controller.logic.transitions import pod_event
from vc_job_controller.logic.view import (
    is_deleting,
    job_min_available,
    pod_is_terminating,
    replicas,
    task_name,
    tasks,
)
from vc_job_controller.logic.volumes import claims_to_create
from vc_proto.batch import TaskSpec
from vc_proto.core import Pod
from vc_proto.vocabulary import JobPhase, PodGroupPhase

# PodGroup phases in which the scheduler has admitted the job, so its pods may exist.
ADMITTED_PODGROUP_PHASES = frozenset(
    {PodGroupPhase.INQUEUE, PodGroupPhase.RUNNING, PodGroupPhase.UNKNOWN, PodGroupPhase.COMPLETED}
)


def sync_job(plan: PlanDraft, update: UpdateStatus | None) -> None:
    view = plan.view
    if is_deleting(view.job):
        return
    draft = StatusDraft.of(view.status)
    plan.status = draft
    if view.phase in ("", JobPhase.PENDING):
        _initiate(plan, draft)
    else:
        for plugin in plan.plugins:
            plan.apply_effects(plugin.on_job_update(view.job), draft)
    _ensure_podgroup(plan)
    if is_podgroup_admitted(plan):
        _reconcile_pods(plan, draft)
    if update is not None:
        update(draft)


def is_podgroup_admitted(plan: PlanDraft) -> bool:
    podgroup = plan.view.podgroup
    phase = podgroup.status.phase if podgroup and podgroup.status else None
    return phase in ADMITTED_PODGROUP_PHASES


def _initiate(plan: PlanDraft, draft: StatusDraft) -> None:
    """initiateJob: first status (phase Pending, minAvailable), the claims of `volumes[].volumeClaim`
    (createJobIOIfNotExist) and every plugin's OnJobAdd."""
    view = plan.view
    if view.phase == "":
        draft.min_available = job_min_available(view.spec)
        group = podgroup_name(view.name, view.uid)
        draft.move_to(JobPhase.PENDING, "JobInitialized", f"waiting for PodGroup {group} to be admitted")
    writes, recorded = claims_to_create(view.job, draft.controlled)
    plan.objects_to_write.extend(writes)
    draft.controlled.update(recorded)
    for plugin in plan.plugins:
        plan.apply_effects(plugin.on_job_add(view.job, dict(draft.controlled)), draft)


def _ensure_podgroup(plan: PlanDraft) -> None:
    view = plan.view
    if view.podgroup is None:
        plan.podgroup_to_create = build_podgroup(view.job, view.priority_classes)
    else:
        plan.podgroup_to_update = updated_podgroup(view.podgroup, view.job, view.priority_classes)


def _reconcile_pods(plan: PlanDraft, draft: StatusDraft) -> None:
    """Create missing pods, delete out-of-sync and surplus ones, and recount from scratch."""
    draft.reset_counts()
    draft.min_available = job_min_available(plan.view.spec)
    by_task = plan.view.pods_by_task()
    for task in tasks(plan.view.spec):
        existing = dict(by_task.get(task_name(task), {}))
        missing = _sync_task_pods(plan, draft, task, existing)
        if missing and dependencies_met(plan.view, task):
            for index in missing:
                _create_pod(plan, draft, task, index)
        for surplus in existing.values():
            _delete(plan, draft, surplus, reason="ScaleDown", message=f"task {task_name(task)} scaled down")


def _sync_task_pods(plan: PlanDraft, draft: StatusDraft, task: TaskSpec, existing: dict[str, Pod]) -> list[int]:
    """Count the task's expected pods (popping them from `existing`); return indexes of missing ones."""
    missing: list[int] = []
    for index in range(replicas(task)):
        pod = existing.pop(pod_name(plan.view.name, task_name(task), index), None)
        if pod is None:
            missing.append(index)
        elif pod_is_terminating(pod):
            draft.terminating += 1
        else:
            if is_out_of_sync(pod):
                _delete(plan, draft, pod, reason="OutOfSync", message="pod marked out of sync")
            draft.count(pod)
    return missing


def _create_pod(plan: PlanDraft, draft: StatusDraft, task: TaskSpec, index: int) -> None:
    pod = build_job_pod(plan.view.job, task, index)
    for plugin in plan.plugins:
        pod = plugin.on_pod_create(pod, plan.view.job)
    plan.pods_to_create.append(pod)
    draft.count_created(pod)
    plan.events.append(
        pod_event(plan, pod, reason=history.POD_CREATED, phase=None, message=f"created for job version {draft.version}")
    )


def _delete(plan: PlanDraft, draft: StatusDraft, pod: Pod, *, reason: str, message: str) -> None:
    """A deleted pod counts as terminating.

    Volcano's syncJob deletes surplus pods without the out-of-sync mark, so a scale-down raises
    PodEvicted and a `PodEvicted -> RestartJob` policy restarts the whole job; Tephra marks them.
    """
    draft.terminating += 1
    if pod_is_terminating(pod):
        return
    deletion = PodDeletion(
        name=pod.metadata.name or "",
        uid=pod.metadata.uid or "",
        mark_out_of_sync=not is_out_of_sync(pod),
        reason=reason,
    )
    plan.pods_to_delete.append(deletion)
    plan.events.append(pod_event(plan, pod, reason=history.POD_DELETED, phase=None, message=f"{reason}: {message}"))
