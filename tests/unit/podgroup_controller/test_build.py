"""Building the PodGroup for a plain pod, and choosing which pods get one."""

from __future__ import annotations

import msgspec
import pytest

from vc_podgroup_controller.logic.build import build_podgroup, min_member, pod_requests
from vc_podgroup_controller.logic.selection import group_name, wants_podgroup
from vc_proto.base import ResourceList
from vc_proto.core import CORE_V1, Container, Pod, PodSpec, PodStatus, ResourceRequirements
from vc_proto.meta import ObjectMeta, OwnerReference

VOLCANO = frozenset({"volcano"})
RS = OwnerReference(api_version="apps/v1", kind="ReplicaSet", name="web-5d4", uid="rs-uid", controller=True)


def pod(
    *,
    scheduler: str | None = "volcano",
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    owners: list[OwnerReference] | None = None,
    requests: ResourceList | None = None,
    init: ResourceList | None = None,
    phase: str | None = "Pending",
    priority_class: str | None = None,
) -> Pod:
    return Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(
            name="p", namespace="ns", uid="pod-uid", annotations=annotations, labels=labels, owner_references=owners
        ),
        spec=PodSpec(
            scheduler_name=scheduler,
            priority_class_name=priority_class,
            containers=[Container(name="c", resources=ResourceRequirements(requests=requests or {"cpu": "1"}))],
            init_containers=[Container(name="i", resources=ResourceRequirements(requests=init))] if init else None,
        ),
        status=PodStatus(phase=phase),
    )


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        pytest.param(pod(), True, id="volcano-pod-without-group"),
        pytest.param(pod(scheduler="default-scheduler"), False, id="other-scheduler"),
        pytest.param(pod(scheduler=None), False, id="no-scheduler-name"),
        pytest.param(pod(annotations={"scheduling.k8s.io/group-name": "g"}), False, id="already-grouped"),
        pytest.param(pod(phase="Succeeded"), False, id="finished"),
        pytest.param(pod(phase="Running"), True, id="running-without-group"),
    ],
)
def test_wants_podgroup(candidate: Pod, expected: bool) -> None:
    assert wants_podgroup(candidate, VOLCANO) is expected


def test_group_name_uses_controller_owner_uid_else_pod_uid() -> None:
    assert group_name(pod()) == "podgroup-pod-uid"
    assert group_name(pod(owners=[RS])) == "podgroup-rs-uid"


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (None, 1),
        ({}, 1),
        ({"scheduling.volcano.sh/group-min-member": "3"}, 3),
        ({"scheduling.volcano.sh/group-min-member": "x"}, 1),
        ({"scheduling.volcano.sh/group-min-member": "0"}, 1),
    ],
)
def test_min_member_from_owner_annotation(annotations: dict[str, str] | None, expected: int) -> None:
    assert min_member(annotations) == expected


def test_bare_pod_group_is_owned_by_the_pod() -> None:
    pg = build_podgroup(pod(annotations={"scheduling.volcano.sh/queue-name": "q1"}, priority_class="high"))
    assert pg.metadata.name == "podgroup-pod-uid" and pg.metadata.namespace == "ns"
    assert pg.spec is not None and pg.status is not None
    assert (pg.spec.min_member, pg.spec.queue, pg.spec.priority_class_name) == (1, "q1", "high")
    assert pg.spec.min_resources == {"cpu": "1"}
    assert pg.status.phase == "Pending"
    refs = pg.metadata.owner_references or []
    assert [(r.kind, r.name, r.uid, r.controller) for r in refs] == [("Pod", "p", "pod-uid", True)]


def test_workload_pod_group_takes_the_workload_refs_and_min_member() -> None:
    owner_annotations = {"scheduling.volcano.sh/group-min-member": "2", "volcano.sh/preemptable": "true", "x": "y"}
    workload_pod = pod(owners=[RS], requests={"cpu": "500m", "memory": "1Gi"})
    pg = build_podgroup(workload_pod, owner_annotations=owner_annotations)
    assert pg.spec is not None
    assert pg.spec.min_member == 2
    assert pg.spec.min_resources == {"cpu": "1", "memory": "2Gi"}
    assert pg.spec.queue is None  # the CRD default `default` applies
    assert pg.metadata.owner_references == [RS]
    assert pg.metadata.annotations == {"volcano.sh/preemptable": "true"}


def test_copies_scheduler_hints_from_the_pod() -> None:
    p = pod(
        annotations={"volcano.sh/preemptable": "false", "volcano.sh/network-topology-highest-tier": "2"},
        labels={"volcano.sh/cooldown-time": "600s", "app": "web"},
    )
    pg = build_podgroup(p)
    assert pg.metadata.annotations == {"volcano.sh/preemptable": "false"}
    assert pg.metadata.labels == {"volcano.sh/cooldown-time": "600s"}
    assert pg.spec is not None and pg.spec.network_topology is not None
    assert (pg.spec.network_topology.mode, pg.spec.network_topology.highest_tier_allowed) == ("hard", 2)


def test_pod_requests_take_the_larger_init_container() -> None:
    requests = pod_requests(pod(requests={"cpu": "1", "memory": "1Gi"}, init={"cpu": "2"}))
    assert {k: str(v) for k, v in requests.items()} == {"cpu": "2", "memory": str(2**30)}


def test_a_container_with_limits_only_asks_for_its_limits_as_the_apiserver_defaults_them() -> None:
    limited = Container(name="main", resources=ResourceRequirements(limits={"cpu": "2", "memory": "1Gi"}))
    plain = pod()
    assert plain.spec is not None
    only_limits = msgspec.structs.replace(plain, spec=msgspec.structs.replace(plain.spec, containers=[limited]))
    pg = build_podgroup(only_limits)
    assert pg.spec is not None and pg.spec.min_resources == {"cpu": "2", "memory": "1Gi"}


def test_build_is_deterministic() -> None:
    assert build_podgroup(pod()) == build_podgroup(pod())
