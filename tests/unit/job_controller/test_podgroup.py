"""The job's PodGroup (semantics 2.8): name, minMember, minTaskMember, minResources, updates."""

from __future__ import annotations

from pathlib import Path

import yaml
from msgspec.structs import replace

from tests.unit.job_controller.jc_builders import SEEDS, job, load_seed, task, tasks_of, with_spec
from vc_job_controller.logic.podgroup import build_podgroup, min_resources, updated_podgroup
from vc_job_controller.logic.quota import format_resource_list, pod_quota_usage
from vc_proto.batch import PartitionPolicySpec, TaskSpec
from vc_proto.core import Container, PodSpec, PodTemplateSpec, ResourceRequirements


def seed_podgroup() -> dict[str, object]:
    data: dict[str, object] = yaml.safe_load(Path(SEEDS / "lm-mpi-job-podgroup.yaml").read_text())
    return data


def test_seed_mpi_job_podgroup_matches_volcano() -> None:
    expected = seed_podgroup()
    j = load_seed("lm-mpi-job.yaml", uid="9c571015-37c7-4a1a-9604-eaa2248613f2")
    pg = build_podgroup(j, {})
    assert pg.metadata.name == expected["metadata"]["name"]  # type: ignore[index]
    assert pg.metadata.labels == {"volcano.sh/job-type": "MPI"}
    assert pg.spec is not None
    assert pg.spec.min_member == expected["spec"]["minMember"]  # type: ignore[index]
    assert pg.spec.min_task_member == expected["spec"]["minTaskMember"]  # type: ignore[index]
    assert pg.spec.min_resources == expected["spec"]["minResources"]  # type: ignore[index]
    owner = (pg.metadata.owner_references or [])[0]
    assert (owner.kind, owner.name, owner.controller, owner.block_owner_deletion) == ("Job", "lm-mpi-job", True, True)


def test_seed_tensorflow_job_counts_memory_in_binary_units() -> None:
    j = load_seed("tensorflow-benchmark.yaml")
    assert format_resource_list(min_resources(j.spec, {})) == {  # type: ignore[arg-type]
        "count/pods": "3",
        "cpu": "5",
        "limits.cpu": "5",
        "limits.memory": "10Gi",
        "memory": "6Gi",
        "pods": "3",
        "requests.cpu": "5",
        "requests.memory": "6Gi",
    }


def prioritized(name: str, replicas: int, cpu: str, priority_class: str, min_available: int | None = None) -> TaskSpec:
    spec = task(name, replicas, cpu=cpu, min_available=min_available)
    template = spec.template
    assert template is not None and template.spec is not None
    return replace(spec, template=replace(template, spec=replace(template.spec, priority_class_name=priority_class)))


PRIORITIES = {"high": 1000, "low": 10}


def test_min_available_below_task_sum_takes_the_first_pods_by_priority() -> None:
    j = job([prioritized("low", 2, "1", "low"), prioritized("high", 2, "3", "high")], min_available=3)
    assert format_resource_list(min_resources(j.spec, PRIORITIES))["cpu"] == "7"  # type: ignore[arg-type]
    # without priorities the spec order wins: 2 x 1 + 1 x 3
    assert format_resource_list(min_resources(j.spec, {}))["cpu"] == "5"  # type: ignore[arg-type]


def test_min_available_above_task_minimums_fills_with_extra_replicas_by_priority() -> None:
    tasks = [prioritized("low", 3, "1", "low", min_available=1), prioritized("high", 3, "10", "high", min_available=1)]
    j = job(tasks, min_available=4)
    # 1 low + 1 high, then 2 extra from the high task first
    assert format_resource_list(min_resources(j.spec, PRIORITIES))["cpu"] == "31"  # type: ignore[arg-type]


def test_min_available_equal_to_task_minimums_counts_only_those() -> None:
    j = job([task("a", 4, cpu="1", min_available=2), task("b", 1, cpu="500m", min_available=1)], min_available=3)
    assert format_resource_list(min_resources(j.spec, {}))["cpu"] == "2500m"  # type: ignore[arg-type]


def test_quota_usage_of_extended_resources_init_containers_and_overhead() -> None:
    main = Container(
        name="main",
        resources=ResourceRequirements(requests={"cpu": "1", "nvidia.com/gpu": "2"}, limits={"cpu": "2"}),
    )
    init = Container(name="init", resources=ResourceRequirements(requests={"cpu": "3", "memory": "1Gi"}))
    spec = PodSpec(containers=[main], init_containers=[init], overhead={"cpu": "100m"})
    assert format_resource_list(pod_quota_usage(spec)) == {
        "count/pods": "1",
        "cpu": "3100m",
        "limits.cpu": "2100m",
        "memory": "1Gi",
        "nvidia.com/gpu": "2",
        "pods": "1",
        "requests.cpu": "3100m",
        "requests.memory": "1Gi",
        "requests.nvidia.com/gpu": "2",
    }


def test_partition_policy_sets_min_task_member_and_sub_groups() -> None:
    partition = PartitionPolicySpec(total_partitions=4, partition_size=2, min_partitions=3)
    j = job([task("w", 8, partition_policy=partition)], min_available=6)
    pg = build_podgroup(with_spec(j, tasks=[replace(tasks_of(j)[0], min_available=None)]), {})
    assert pg.spec is not None and pg.spec.min_task_member == {"w": 6}
    assert pg.spec.sub_group_policy is not None
    sub = pg.spec.sub_group_policy[0]
    assert (sub.name, sub.sub_group_size, sub.min_sub_groups, sub.match_label_keys) == (
        "w",
        2,
        3,
        ["volcano.sh/partition-id"],
    )
    assert sub.label_selector is not None and sub.label_selector.match_labels == {"volcano.sh/task-spec": "w"}


def test_update_only_when_an_updatable_field_differs() -> None:
    j = job([task("a", 2)])
    pg = build_podgroup(j, {})
    assert updated_podgroup(pg, j, {}) is None
    bigger = with_spec(j, min_available=1, priority_class_name="high")
    update = updated_podgroup(pg, bigger, {})
    assert update is not None and update.spec is not None
    assert (update.spec.min_member, update.spec.priority_class_name) == (1, "high")
    assert update.spec.min_resources == {
        "count/pods": "1",
        "cpu": "1",
        "limits.cpu": "1",
        "pods": "1",
        "requests.cpu": "1",
    }


def test_template_without_resources_counts_pods_only() -> None:
    j = job([TaskSpec(name="t", replicas=2, template=PodTemplateSpec(spec=PodSpec(containers=[Container(name="c")])))])
    assert format_resource_list(min_resources(j.spec, {})) == {"count/pods": "2", "pods": "2"}  # type: ignore[arg-type]
