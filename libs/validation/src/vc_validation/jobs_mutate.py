"""Job defaulting on CREATE, in Volcano's order (`jobs/mutate/mutate_job.go`).

1. queue `default`; 2. schedulerName (the first configured, `volcano`); 3. maxRetry 3;
4. per task: name `default<i>`, `ClusterFirstWithHostNet` for hostNetwork pods without a dnsPolicy,
   minAvailable = replicas (or minPartitions*partitionSize), maxRetry 3;
5. job minAvailable = sum of the tasks' minAvailable; 6. plugin dependencies (mpi -> ssh+svc, ...).
Every step only fills what is unset, so mutating a mutated job changes nothing.
"""

from __future__ import annotations

from typing import Final

from msgspec.structs import replace

from vc_proto.batch import Job, JobSpec, TaskSpec
from vc_proto.core import PodSpec, PodTemplateSpec
from vc_proto.vocabulary import DEFAULT_QUEUE, DEFAULT_SCHEDULER_NAME
from vc_validation.plugins import with_dependencies

DEFAULT_MAX_RETRY: Final = 3
DEFAULT_TASK_PREFIX: Final = "default"
DNS_CLUSTER_FIRST_WITH_HOST_NET: Final = "ClusterFirstWithHostNet"


def mutate_job(job: Job, *, scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> Job:
    spec = job.spec or JobSpec()
    tasks = [default_task(task, index) for index, task in enumerate(spec.tasks or [])]
    spec = replace(
        spec,
        queue=spec.queue or DEFAULT_QUEUE,
        scheduler_name=spec.scheduler_name or scheduler_name,
        max_retry=spec.max_retry or DEFAULT_MAX_RETRY,
        tasks=tasks if spec.tasks is not None else None,
        min_available=spec.min_available or sum(task.min_available or 0 for task in tasks),
        plugins=with_dependencies(spec.plugins) if spec.plugins is not None else None,
    )
    return replace(job, spec=spec)


def default_task(task: TaskSpec, index: int) -> TaskSpec:
    return replace(
        task,
        name=task.name or f"{DEFAULT_TASK_PREFIX}{index}",
        min_available=task.min_available if task.min_available is not None else default_task_min_available(task),
        max_retry=task.max_retry or DEFAULT_MAX_RETRY,
        template=_default_dns_policy(task.template),
    )


def default_task_min_available(task: TaskSpec) -> int:
    """minPartitions*partitionSize when minPartitions is set (> 0), else replicas: Volcano falls back to
    replicas so that an omitted minPartitions never silently drops the task's gang guarantee."""
    partition = task.partition_policy
    if partition is not None and (partition.min_partitions or 0) > 0:
        return (partition.min_partitions or 0) * (partition.partition_size or 0)
    return task.replicas or 0


def _default_dns_policy(template: PodTemplateSpec | None) -> PodTemplateSpec | None:
    pod: PodSpec | None = template.spec if template else None
    if template is None or pod is None or not pod.host_network or pod.dns_policy:
        return template
    return replace(template, spec=replace(pod, dns_policy=DNS_CLUSTER_FIRST_WITH_HOST_NET))
