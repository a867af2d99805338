"""History records for what a plan changes: job phase, task counts, pods created, deleted or moved."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from msgspec.structs import replace

from vc_core.times import rfc3339
from vc_job_controller.logic import history
from vc_job_controller.logic.draft import PlanDraft
from vc_job_controller.logic.pods import is_out_of_sync
from vc_job_controller.logic.view import Request, phase_of, pod_phase, task_of_pod
from vc_proto.batch import JobStatus
from vc_proto.core import ContainerStateTerminated, Pod
from vc_proto.vocabulary import Event, PodPhase

DELETED = "Deleted"


def pod_event(
    plan: PlanDraft, pod: Pod, *, reason: str, phase: str | None, message: str | None = None
) -> history.HistoryEvent:
    status = pod.status
    terminated = _terminated(pod)
    return history.HistoryEvent(
        occurred_at=rfc3339(plan.now),
        kind=history.POD_KIND,
        namespace=plan.view.namespace,
        name=pod.metadata.name or "",
        reason=reason,
        message=message,
        job=plan.view.name,
        task=task_of_pod(pod),
        uid=pod.metadata.uid,
        phase=phase,
        node=(pod.spec.node_name if pod.spec else None) or None,
        exit_code=terminated.exit_code if terminated else None,
        started_at=status.start_time if status else None,
        finished_at=terminated.finished_at if terminated else None,
    )


def _terminated(pod: Pod) -> ContainerStateTerminated | None:
    """The first container's terminated state (Volcano reads the exit code there)."""
    statuses = (pod.status.container_statuses if pod.status else None) or []
    for status in statuses:
        if status.state and status.state.terminated:
            return status.state.terminated
    return None


def job_phase_event(plan: PlanDraft, old: JobStatus, new: JobStatus) -> history.HistoryEvent | None:
    before, after = phase_of(old), phase_of(new)
    if before == after:
        return None
    state = new.state
    return history.HistoryEvent(
        occurred_at=rfc3339(plan.now),
        kind=history.JOB_KIND,
        namespace=plan.view.namespace,
        name=plan.view.name,
        reason=history.PHASE_CHANGED,
        message=_join(state.reason if state else None, state.message if state else None),
        job=plan.view.name,
        uid=plan.view.uid or None,
        phase=after,
        previous_phase=before or None,
    )


def _join(reason: str | None, message: str | None) -> str | None:
    if reason and message:
        return f"{reason}: {message}"
    return reason or message


def task_phase(counts: dict[str, int], replicas: int) -> str:
    """A task's phase from its pods' phases, Tephra's summary (Volcano has none)."""
    succeeded, failed = counts.get(PodPhase.SUCCEEDED, 0), counts.get(PodPhase.FAILED, 0)
    if replicas and succeeded >= replicas:
        return "Completed"
    if replicas and succeeded + failed >= replicas:
        return "Failed"
    if counts.get(PodPhase.RUNNING, 0):
        return "Running"
    return "Pending" if sum(counts.values()) else "Inactive"


def task_events(
    plan: PlanDraft, old: JobStatus, new: JobStatus, *, seen: Mapping[str, tuple[str, datetime]] | None = None
) -> list[history.HistoryEvent]:
    """One record per task whose summarised phase changed, with its pod counts as the message; stamped
    when `seen` says the task was first seen in that phase (a change held back), else now."""
    events = []
    for task in plan.view.spec.tasks or []:
        name = task.name or ""
        before_counts = _counts(old, name)
        after_counts = _counts(new, name)
        before, after = task_phase(before_counts, task.replicas or 0), task_phase(after_counts, task.replicas or 0)
        if before == after:
            continue
        first = (seen or {}).get(name)
        at = first[1] if first is not None and first[0] == after else plan.now
        events.append(
            history.HistoryEvent(
                occurred_at=rfc3339(at),
                kind=history.TASK_KIND,
                namespace=plan.view.namespace,
                name=name,
                reason=history.PHASE_CHANGED,
                message=", ".join(f"{n} {p}" for p, n in sorted(after_counts.items())) or "no pods",
                job=plan.view.name,
                task=name,
                phase=after,
                previous_phase=before,
            )
        )
    return events


def _counts(status: JobStatus, task: str) -> dict[str, int]:
    state = (status.task_status_count or {}).get(task)
    return dict(state.phase or {}) if state else {}


def request_pod_event(plan: PlanDraft, request: Request | None = None) -> history.HistoryEvent | None:
    """The transition of the pod that raised the request (the plan's own, or one merged into its pass),
    when the shell told us its previous phase."""
    request = request if request is not None else plan.request
    if not request.pod_name or request.previous_phase is None:
        return None
    pod = plan.view.pods.get(request.pod_name)
    if pod is None:
        return _pod_gone_event(plan, request)
    phase = pod_phase(pod)
    if phase == request.previous_phase or (request.previous_phase == "" and phase == PodPhase.PENDING):
        return None  # a new Pending pod was already reported as PodCreated
    reasons: dict[str, str] = {
        PodPhase.RUNNING: history.POD_STARTED,
        PodPhase.SUCCEEDED: history.POD_EXITED,
        PodPhase.FAILED: history.POD_EXITED,
    }
    reason = reasons.get(phase, history.POD_PHASE_CHANGED)
    event = pod_event(plan, pod, reason=reason, phase=phase, message=_pod_message(pod, request.event))
    return _with_previous(event, request.previous_phase)


def _pod_gone_event(plan: PlanDraft, request: Request) -> history.HistoryEvent | None:
    last_seen = request.pod
    if last_seen is not None and is_out_of_sync(last_seen):
        return None  # the controller deleted it and reported PodDeleted then
    reason = history.POD_EVICTED if request.event == Event.POD_EVICTED else history.POD_DELETED
    if last_seen is None:
        return history.HistoryEvent(
            occurred_at=rfc3339(plan.now),
            kind=history.POD_KIND,
            namespace=plan.view.namespace,
            name=request.pod_name,
            reason=reason,
            job=plan.view.name,
            task=request.task_name or None,
            uid=request.pod_uid or None,
            phase=DELETED,
            previous_phase=request.previous_phase or None,
        )
    event = pod_event(
        plan, last_seen, reason=reason, phase=DELETED, message="deleted by someone other than the job controller"
    )
    return _with_previous(event, request.previous_phase)


def _with_previous(event: history.HistoryEvent, previous: str | None) -> history.HistoryEvent:
    return replace(event, previous_phase=previous or None)


def _pod_message(pod: Pod, event: str) -> str | None:
    status = pod.status
    parts = [p for p in (status.reason if status else None, status.message if status else None) if p]
    terminated = _terminated(pod)
    if terminated is not None and terminated.reason:
        parts.append(terminated.reason)
    if event:
        parts.append(f"event {event}")
    return "; ".join(parts) or None
