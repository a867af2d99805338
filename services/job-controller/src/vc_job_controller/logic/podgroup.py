"""The PodGroup a job needs (Volcano's createOrUpdatePodGroup and calcPGMinResources)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

import msgspec
from msgspec.structs import replace

from vc_core.resources import Resources, add
from vc_job_controller.logic.names import podgroup_name
from vc_job_controller.logic.ownership import owner_reference
from vc_job_controller.logic.quota import format_resource_list, pod_quota_usage, times
from vc_job_controller.logic.view import job_min_available, min_task_member, replicas, task_name, tasks
from vc_proto.batch import Job, JobSpec, TaskSpec
from vc_proto.core import PodSpec
from vc_proto.meta import LabelSelector, ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, PodGroupSpec, SubGroupPolicySpec
from vc_proto.vocabulary import TASK_SPEC_KEY

PARTITION_ID_KEY = "volcano.sh/partition-id"


@dataclass(frozen=True, slots=True)
class _RankedTask:
    priority: int
    task: TaskSpec

    @property
    def usage(self) -> Resources:
        template = self.task.template
        return pod_quota_usage(template.spec if template and template.spec else PodSpec())


def _ranked_tasks(spec: JobSpec, priority_classes: Mapping[str, int]) -> list[_RankedTask]:
    """Tasks by their template PriorityClass value, highest first; a stable sort keeps spec order on ties
    (Go's sort.Sort is an insertion sort below 12 elements, so stable for any realistic job)."""
    ranked = []
    for task in tasks(spec):
        pod_spec = task.template.spec if task.template else None
        class_name = pod_spec.priority_class_name if pod_spec else None
        ranked.append(_RankedTask(priority_classes.get(class_name or "", 0), task))
    return sorted(ranked, key=lambda r: -r.priority)


def _first_count_resources(ranked: list[_RankedTask], count: int) -> Resources:
    """CalcFirstCountResources: the first `count` pods in priority order."""
    total: Resources = {}
    for item in ranked:
        if count <= replicas(item.task):
            return add(total, times(item.usage, count))
        total = add(total, times(item.usage, replicas(item.task)))
        count -= replicas(item.task)
    return total


def _min_available_resources(ranked: list[_RankedTask], job_min: int) -> Resources:
    """CalcPGMinResources: every task's minAvailable pods, then extra replicas up to job minAvailable."""
    total: Resources = {}
    counted = 0
    for item in ranked:
        if item.task.min_available is None:
            continue
        take = min(item.task.min_available, job_min - counted)
        total, counted = add(total, times(item.usage, take)), counted + take
        if counted >= job_min:
            return total
    left = job_min - counted
    for item in ranked:
        spare = replicas(item.task) - (item.task.min_available or 0)
        if item.task.min_available is not None and spare == 0:
            continue
        take = min(spare, left)
        total, left = add(total, times(item.usage, take)), left - take
        if left <= 0:
            break
    return total


def min_resources(spec: JobSpec, priority_classes: Mapping[str, int]) -> Resources:
    ranked = _ranked_tasks(spec, priority_classes)
    total_task_min = sum(t.min_available if t.min_available is not None else replicas(t) for t in tasks(spec))
    if job_min_available(spec) < total_task_min:
        return _first_count_resources(ranked, job_min_available(spec))
    return _min_available_resources(ranked, job_min_available(spec))


def sub_group_policies(spec: JobSpec) -> list[SubGroupPolicySpec] | None:
    policies = [
        SubGroupPolicySpec(
            name=task_name(task),
            sub_group_size=task.partition_policy.partition_size,
            min_sub_groups=task.partition_policy.min_partitions,
            label_selector=LabelSelector(match_labels={TASK_SPEC_KEY: task_name(task)}),
            match_label_keys=[PARTITION_ID_KEY],
            network_topology=task.partition_policy.network_topology,
        )
        for task in tasks(spec)
        if task.partition_policy is not None
    ]
    return policies or None


# desired_spec is asked on every sync of a job (tens of times in a job's life) and its quota
# arithmetic is exact, so slow: remember it per job spec and priority classes. Bounded, oldest out.
_DESIRED: OrderedDict[bytes, PodGroupSpec] = OrderedDict()
_DESIRED_MAX = 4096
_encode = msgspec.json.Encoder().encode


def desired_spec(job: Job, priority_classes: Mapping[str, int]) -> PodGroupSpec:
    spec = job.spec or JobSpec()
    key = _encode((spec, sorted(priority_classes.items())))
    known = _DESIRED.get(key)
    if known is None:
        known = _DESIRED[key] = _desired_spec(spec, priority_classes)
        if len(_DESIRED) > _DESIRED_MAX:
            _DESIRED.popitem(last=False)
    return known


def _desired_spec(spec: JobSpec, priority_classes: Mapping[str, int]) -> PodGroupSpec:
    return PodGroupSpec(
        min_member=job_min_available(spec),
        min_task_member={task_name(t): min_task_member(t) for t in tasks(spec)},
        queue=spec.queue,
        priority_class_name=spec.priority_class_name,
        min_resources=format_resource_list(min_resources(spec, priority_classes)),
        network_topology=spec.network_topology,
        sub_group_policy=sub_group_policies(spec),
    )


def build_podgroup(job: Job, priority_classes: Mapping[str, int]) -> PodGroup:
    """A new PodGroup `<job>-<uid>` with the job's labels and annotations, owned by the job."""
    meta = ObjectMeta(
        name=podgroup_name(job.metadata.name or "", job.metadata.uid or ""),
        namespace=job.metadata.namespace,
        labels=job.metadata.labels,
        annotations=job.metadata.annotations,
        owner_references=[owner_reference(job)],
    )
    return PodGroup(api_version=SCHEDULING_V1BETA1, metadata=meta, spec=desired_spec(job, priority_classes))


def updated_podgroup(current: PodGroup, job: Job, priority_classes: Mapping[str, int]) -> PodGroup | None:
    """The existing PodGroup with Volcano's updatable fields refreshed, or None when nothing differs.

    Volcano updates priorityClassName, minMember, minResources, minTaskMember and subGroupPolicy.
    """
    want = desired_spec(job, priority_classes)
    have = current.spec or PodGroupSpec()
    merged_tasks = {**(have.min_task_member or {}), **(want.min_task_member or {})}
    new_spec = replace(
        have,
        priority_class_name=want.priority_class_name,
        min_member=want.min_member,
        min_resources=want.min_resources,
        min_task_member=merged_tasks,
        sub_group_policy=want.sub_group_policy,
    )
    return None if new_spec == have else replace(current, spec=new_spec)
