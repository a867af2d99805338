"""Building a job's pod from its task template (Volcano's createJobPod), before plugins run."""

from __future__ import annotations

from typing import Final

from msgspec.structs import replace

from vc_job_controller.logic import names
from vc_job_controller.logic.ownership import owner_reference
from vc_job_controller.logic.podgroup import PARTITION_ID_KEY
from vc_job_controller.logic.view import DEFAULT_TASK_SPEC, task_name
from vc_job_controller.logic.volumes import claims as job_claims
from vc_proto.batch import Job, JobSpec, JobStatus, TaskSpec
from vc_proto.core import CORE_V1, Container, Pod, PodSpec, Volume, VolumeMount
from vc_proto.meta import ObjectMeta
from vc_proto.vocabulary import (
    GROUP_NAME_ANNOTATION,
    JOB_NAME_KEY,
    JOB_NAMESPACE_KEY,
    JOB_RETRY_COUNT_KEY,
    JOB_VERSION_KEY,
    OUT_OF_SYNC_KEY,
    PREEMPTABLE_KEY,
    QUEUE_NAME_KEY,
    TASK_INDEX_KEY,
    TASK_SPEC_KEY,
    TEMPLATE_UID_KEY,
)

NUMA_POLICY_KEY: Final = "volcano.sh/numa-topology-policy"
COOLDOWN_TIME_KEY: Final = "volcano.sh/cooldown-time"
REVOCABLE_ZONE_KEY: Final = "volcano.sh/revocable-zone"
JDB_MIN_AVAILABLE_KEY: Final = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE_KEY: Final = "volcano.sh/jdb-max-unavailable"
# Job annotations copied onto pods, in Volcano's order (jdb: min-available wins over max-unavailable).
_COPIED_ANNOTATIONS: Final = (PREEMPTABLE_KEY, COOLDOWN_TIME_KEY, REVOCABLE_ZONE_KEY)
_COPIED_LABELS: Final = (PREEMPTABLE_KEY, COOLDOWN_TIME_KEY)


def pod_annotations(job: Job, task: TaskSpec, index: int) -> dict[str, str]:
    template = task.template.metadata if task.template and task.template.metadata else ObjectMeta()
    spec, status = job.spec or JobSpec(), job.status or JobStatus()
    job_name = job.metadata.name or ""
    annotations = dict(template.annotations or {})
    annotations |= {
        TASK_INDEX_KEY: str(index),
        TASK_SPEC_KEY: task_name(task) or DEFAULT_TASK_SPEC,
        GROUP_NAME_ANNOTATION: names.podgroup_name(job_name, job.metadata.uid or ""),
        JOB_NAME_KEY: job_name,
        QUEUE_NAME_KEY: spec.queue or "",
        JOB_VERSION_KEY: str(status.version or 0),
        TEMPLATE_UID_KEY: f"{job_name}-{task_name(task)}",
        JOB_RETRY_COUNT_KEY: str(status.retry_count or 0),
    }
    if task.topology_policy:
        annotations[NUMA_POLICY_KEY] = task.topology_policy
    job_annotations = job.metadata.annotations or {}
    annotations |= {key: job_annotations[key] for key in _COPIED_ANNOTATIONS if key in job_annotations}
    for key in (JDB_MIN_AVAILABLE_KEY, JDB_MAX_UNAVAILABLE_KEY):
        if key in job_annotations:
            annotations[key] = job_annotations[key]
            break
    return annotations


def pod_labels(job: Job, task: TaskSpec, index: int) -> dict[str, str]:
    template = task.template.metadata if task.template and task.template.metadata else ObjectMeta()
    labels = dict(template.labels or {})
    labels |= {
        TASK_INDEX_KEY: str(index),
        JOB_NAME_KEY: job.metadata.name or "",
        TASK_SPEC_KEY: task_name(task) or DEFAULT_TASK_SPEC,
        JOB_NAMESPACE_KEY: job.metadata.namespace or "",
        QUEUE_NAME_KEY: (job.spec or JobSpec()).queue or "",
    }
    job_labels = job.metadata.labels or {}
    labels |= {key: job_labels[key] for key in _COPIED_LABELS if key in job_labels}
    partition = task.partition_policy
    if partition is not None:
        size = partition.partition_size or 0
        labels[PARTITION_ID_KEY] = str(index // size if size > 0 else 0)
    return labels


def _mount_job_volumes(job: Job, spec: PodSpec) -> PodSpec:
    """Each job volume's claim (named, or the one the controller creates for `volumeClaim`) becomes a
    PVC volume mounted in every container (not init ones)."""
    volumes, mounts = list(spec.volumes or []), []
    seen: set[str] = set()
    for claim, mount_path, _ in job_claims(job):
        if claim in seen:
            continue
        seen.add(claim)
        name = names.volume_name(job.metadata.name or "", claim)
        volumes.append(Volume(name=name, persistent_volume_claim={"claimName": claim}))
        mounts.append(VolumeMount(name=name, mount_path=mount_path))
    if not mounts:
        return spec

    def mount(container: Container) -> Container:
        return replace(container, volume_mounts=[*(container.volume_mounts or []), *mounts])

    return replace(spec, volumes=volumes, containers=[mount(c) for c in spec.containers or []])


def _pod_spec(job: Job, task: TaskSpec) -> PodSpec:
    spec = task.template.spec if task.template and task.template.spec else PodSpec()
    job_spec = job.spec or JobSpec()
    spec = replace(
        spec,
        scheduler_name=spec.scheduler_name or job_spec.scheduler_name,
        priority_class_name=spec.priority_class_name or job_spec.priority_class_name,
    )
    return _mount_job_volumes(job, spec)


def build_job_pod(job: Job, task: TaskSpec, index: int) -> Pod:
    """Volcano's createJobPod: `<job>-<task>-<index>`, controller-owned by the job."""
    meta = ObjectMeta(
        name=names.pod_name(job.metadata.name or "", task_name(task), index),
        namespace=job.metadata.namespace,
        labels=pod_labels(job, task, index),
        annotations=pod_annotations(job, task, index),
        owner_references=[owner_reference(job)],
    )
    return Pod(api_version=CORE_V1, metadata=meta, spec=_pod_spec(job, task))


def is_out_of_sync(pod: Pod) -> bool:
    return OUT_OF_SYNC_KEY in (pod.metadata.annotations or {})
