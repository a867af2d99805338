"""Per-task rules of a Job: names, replica counts, minAvailable, partitions, pod names, policies, templates."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from vc_proto.batch import NetworkTopologySpec, TaskSpec
from vc_validation.limits import MAX_MAX_RETRY, MAX_REPLICAS_PER_TASK, MAX_TOTAL_REPLICAS
from vc_validation.names import dns1123_label_errors, format_errors, qualified_name_errors
from vc_validation.policies import validate_policies
from vc_validation.templates import validate_template
from vc_validation.verdict import Violation

TOPOLOGY_BOTH_MESSAGE = "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously"


def validate_network_topology(topology: NetworkTopologySpec | None, *, path: str) -> Iterator[Violation]:
    if topology is None:
        return
    if topology.highest_tier_allowed is not None and topology.highest_tier_name:
        yield Violation(path, "network-topology", TOPOLOGY_BOTH_MESSAGE)
    if topology.mode not in (None, "", "hard", "soft"):
        yield Violation(f"{path}.mode", "network-topology-mode", "must be one of [hard soft]")
    if topology.highest_tier_allowed is not None and topology.highest_tier_allowed < 0:
        yield Violation(f"{path}.highestTierAllowed", "network-topology-tier", "must be greater than or equal to 0")


def validate_tasks(job_name: str, tasks: Sequence[TaskSpec]) -> Iterator[Violation]:
    """Counts first (so a huge replica number stops everything else), then every task on its own."""
    total = sum(max(task.replicas or 0, 0) for task in tasks)
    if total > MAX_TOTAL_REPLICAS:
        yield Violation(
            "spec.tasks", "replicas-total", f"total replicas {total} exceed the limit of {MAX_TOTAL_REPLICAS}"
        )
    seen: set[str] = set()
    for index, task in enumerate(tasks):
        path = f"spec.tasks[{index}]"
        name = task.name or ""
        if name in seen:
            yield Violation(f"{path}.name", "task-name-unique", f"duplicated task name {name}")
        seen.add(name)
        yield from validate_task_counts(task, path, job_name)
        yield from _validate_task_name(job_name, task, path)
        yield from validate_policies(task.policies, path=f"{path}.policies")
        yield from validate_template(task, path)


def validate_task_counts(task: TaskSpec, path: str, job_name: str) -> Iterator[Violation]:
    """replicas and minAvailable bounds and the partition policy: the rules both CREATE and UPDATE apply."""
    replicas = task.replicas or 0
    name = task.name or ""
    if replicas < 0:
        yield Violation(f"{path}.replicas", "replicas-non-negative", f"'replicas' must be >= 0 in task: {name}")
    elif replicas > MAX_REPLICAS_PER_TASK:
        yield Violation(
            f"{path}.replicas",
            "replicas-limit",
            f"'replicas' {replicas} exceed the limit of {MAX_REPLICAS_PER_TASK} in task: {name}",
        )
    if task.min_available is not None and task.min_available < 0:
        yield Violation(
            f"{path}.minAvailable", "min-available-non-negative", f"'minAvailable' must be >= 0 in task: {name}"
        )
    elif task.min_available is not None and task.min_available > replicas:
        yield Violation(
            f"{path}.minAvailable",
            "task-min-available",
            f"'minAvailable' is greater than 'replicas' in task: {name}, job: {job_name}",
        )
    if task.max_retry is not None and not -1 <= task.max_retry <= MAX_MAX_RETRY:
        yield Violation(f"{path}.maxRetry", "max-retry", f"'maxRetry' must be between -1 and {MAX_MAX_RETRY}")
    yield from _validate_partition(task, path, job_name)


def _validate_task_name(job_name: str, task: TaskSpec, path: str) -> Iterator[Violation]:
    name = task.name or ""
    if errors := dns1123_label_errors(name):
        yield Violation(f"{path}.name", "task-name", f"{name[:64]!r}: {format_errors(errors)}")
        return
    # The longest pod name this task creates: Volcano checks `<job>-<task>-<index>` is a qualified name.
    last_index = max((task.replicas or 0) - 1, 0)
    pod_name = f"{job_name}-{name}-{last_index}"
    if errors := qualified_name_errors(pod_name):
        yield Violation(
            f"{path}.name", "pod-name", f"create pod with name {pod_name} validate failed {format_errors(errors)}"
        )


def _validate_partition(task: TaskSpec, path: str, job_name: str) -> Iterator[Violation]:
    policy = task.partition_policy
    if policy is None:
        return
    where = f"in task: {task.name or ''}, job: {job_name}"
    total, size, minimum = policy.total_partitions or 0, policy.partition_size or 0, policy.min_partitions or 0
    here = f"{path}.partitionPolicy"
    if total <= 0:
        yield Violation(
            f"{here}.totalPartitions", "partition-policy", f"'TotalPartitions' must be greater than 0 {where}"
        )
    elif size <= 0:
        yield Violation(f"{here}.partitionSize", "partition-policy", f"'PartitionSize' must be greater than 0 {where}")
    elif (task.replicas or 0) != total * size:
        yield Violation(here, "partition-policy", f"'Replicas' are not equal to TotalPartitions*PartitionSize {where}")
    elif task.min_available is not None and minimum > 0 and minimum * size != task.min_available:
        yield Violation(here, "partition-policy", f"'MinAvailable' is not equal to MinPartitions*PartitionSize {where}")
    yield from validate_network_topology(policy.network_topology, path=f"{here}.networkTopology")
