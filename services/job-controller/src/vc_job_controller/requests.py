"""Which Request an observed change raises (Volcano's informer handlers, job_controller_handler.go). Pure.

Pods count only when their controller owner is a batch.volcano.sh Job and they carry the job-name,
job-version and task-spec annotations. An event is a hint: `decide` re-reads the whole view.
"""

from __future__ import annotations

from collections.abc import Mapping

from vc_job_controller.logic.view import Request
from vc_proto.batch import BATCH_V1ALPHA1, Job
from vc_proto.core import Pod
from vc_proto.scheduling import PodGroup
from vc_proto.vocabulary import JOB_NAME_KEY, JOB_VERSION_KEY, OUT_OF_SYNC_KEY, TASK_SPEC_KEY, Event

DEFAULT_TASK_MAX_RETRY = 3


def owning_job(pod: Pod) -> tuple[str, str] | None:
    """(job name, job uid) when the pod is a vcjob's pod that the job controller manages."""
    annotations = pod.metadata.annotations or {}
    if not all(k in annotations for k in (JOB_NAME_KEY, JOB_VERSION_KEY, TASK_SPEC_KEY)):
        return None
    for ref in pod.metadata.owner_references or []:
        if ref.controller and ref.kind == "Job" and ref.api_version == BATCH_V1ALPHA1:
            return ref.name, ref.uid
    return None


def _phase(pod: Pod | None) -> str:
    return (pod.status.phase if pod and pod.status else None) or ""


def _exit_code(pod: Pod) -> int:
    for status in (pod.status.container_statuses if pod.status else None) or []:
        terminated = status.state.terminated if status.state else None
        if terminated is not None:
            return terminated.exit_code
    return 0


def _base(pod: Pod, job_uid: str, previous: Pod | None) -> Request:
    annotations = pod.metadata.annotations or {}
    try:
        version = int(annotations.get(JOB_VERSION_KEY, "0"))
    except ValueError:
        version = 0
    return Request(
        task_name=annotations.get(TASK_SPEC_KEY, ""),
        pod_name=pod.metadata.name or "",
        pod_uid=pod.metadata.uid or "",
        job_version=version,
        job_uid=job_uid,
        previous_phase=_phase(previous) if previous is not None else "",
        pod=pod,
    )


def _replace(request: Request, **changes: object) -> Request:
    import msgspec

    return msgspec.structs.replace(request, **changes)


def _out_of_sync(pod: Pod) -> bool:
    return (pod.metadata.annotations or {}).get(OUT_OF_SYNC_KEY) == "true"


def task_completed(job: Job | None, task: str, siblings: Mapping[str, Pod]) -> bool:
    """Every replica of the task has Succeeded (Volcano's cache.TaskCompleted)."""
    replicas = next(
        (t.replicas or 0 for t in (job.spec.tasks if job and job.spec else None) or [] if t.name == task), 0
    )
    done = sum(
        1
        for p in siblings.values()
        if (p.metadata.annotations or {}).get(TASK_SPEC_KEY) == task and _phase(p) == "Succeeded"
    )
    return replicas > 0 and done >= replicas


def task_failed(job: Job | None, task: str, siblings: Mapping[str, Pod]) -> bool:
    """Container restarts of the task's Running/Pending pods reached the task's maxRetry (0 means 3, -1 never)."""
    spec = next((t for t in (job.spec.tasks if job and job.spec else None) or [] if t.name == task), None)
    limit = (spec.max_retry if spec else None) or DEFAULT_TASK_MAX_RETRY
    if limit < 0:
        return False
    restarts = 0
    for p in siblings.values():
        if (p.metadata.annotations or {}).get(TASK_SPEC_KEY) != task or _phase(p) not in ("Running", "Pending"):
            continue
        statuses = [
            *((p.status.container_statuses or []) if p.status else []),
            *((p.status.init_container_statuses or []) if p.status else []),
        ]
        restarts += sum(s.restart_count for s in statuses)
    return restarts >= limit


def for_pod_added(pod: Pod, job_uid: str) -> Request:
    event = Event.OUT_OF_SYNC if _out_of_sync(pod) else Event.POD_PENDING
    return _replace(_base(pod, job_uid, None), event=event.value)


def for_pod_updated(old: Pod, new: Pod, job_uid: str, job: Job | None, siblings: Mapping[str, Pod]) -> Request:
    request = _replace(_base(new, job_uid, old), event=Event.OUT_OF_SYNC.value)
    if _out_of_sync(new):
        return request
    before, after, task = _phase(old), _phase(new), request.task_name
    if after == "Failed" and before != "Failed":
        return _replace(request, event=Event.POD_FAILED.value, exit_code=_exit_code(new))
    if after == "Succeeded" and before != "Succeeded" and task_completed(job, task, siblings):
        return _replace(request, event=Event.TASK_COMPLETED.value)
    if after in ("Running", "Pending"):
        edge = Event.POD_RUNNING if after == "Running" else Event.POD_PENDING
        if task_failed(job, task, siblings):
            request = _replace(request, event=Event.TASK_FAILED.value)
        if before != after:
            request = _replace(request, event=edge.value)
    return request


def for_pod_deleted(pod: Pod, job_uid: str) -> Request:
    event = Event.OUT_OF_SYNC if _out_of_sync(pod) else Event.POD_EVICTED
    return _replace(_base(pod, job_uid, pod), event=event.value, previous_phase=_phase(pod))


def for_podgroup_changed(old: PodGroup | None, new: PodGroup) -> Request | None:
    """Only a phase change matters; `Unknown` raises the Unknown event, others a plain sync."""
    before = (old.status.phase if old and old.status else None) or ""
    after = (new.status.phase if new.status else None) or ""
    if old is not None and before == after:
        return None
    return Request(event=Event.JOB_UNKNOWN.value if after == "Unknown" else "")


def for_podgroup_deleted(job_uid: str) -> Request:
    """The job's PodGroup is gone (a kill deleted it, or someone did): sync, so the job makes the next one."""
    return Request(event=Event.OUT_OF_SYNC.value, job_uid=job_uid)


def for_job_changed(old: Job | None, new: Job) -> Request | None:
    """Job add or spec/phase change -> OutOfSync; status-only echoes of our own writes are ignored."""
    if old is not None:
        same_phase = (old.status and old.status.state and old.status.state.phase) == (
            new.status and new.status.state and new.status.state.phase
        )
        if old.spec == new.spec and same_phase:
            return None
    return Request(event=Event.OUT_OF_SYNC.value, job_uid=new.metadata.uid or "")


def for_command(action: str) -> Request:
    return Request(event=Event.COMMAND_ISSUED.value, action=action)
