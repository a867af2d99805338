"""Snapshot views for the scheduler-service tests (the core's own types, built directly)."""

from __future__ import annotations

from fractions import Fraction

from vc_scheduling.snapshot.cluster import NodeObj, PodGroupObj, PodObj


def pod(name: str, group: str, *, node: str = "", phase: str = "Pending") -> PodObj:
    return PodObj(
        name=name,
        namespace="ns",
        uid=f"uid-{name}",
        labels={},
        annotations={"scheduling.k8s.io/group-name": group},
        scheduler_name="volcano",
        node_name=node,
        priority=None,
        priority_class_name="",
        preemption_policy="",
        node_selector={},
        affinity=None,
        tolerations=(),
        requests={"cpu": Fraction(1)},
        phase=phase,
        deleting=False,
    )


def group(name: str, queue: str = "default", *, min_member: int = 1) -> PodGroupObj:
    return PodGroupObj(
        name=name,
        namespace="ns",
        labels={},
        annotations={},
        min_member=min_member,
        min_task_member={},
        min_resources=None,
        queue=queue,
        priority_class_name="",
        phase="Inqueue",
    )


def node(name: str) -> NodeObj:
    return NodeObj(name=name, labels={}, taints=(), unschedulable=False, allocatable={"cpu": Fraction(4)}, max_pods=10)
