"""Pod statuses as a kubelet writes them: running, finished with an exit code, and node objects."""

from __future__ import annotations

from collections.abc import Mapping

from vc_proto.core import (
    CORE_V1,
    ContainerState,
    ContainerStateTerminated,
    ContainerStatus,
    Node,
    NodeCondition,
    NodeSpec,
    NodeStatus,
    Pod,
    PodCondition,
    PodStatus,
    Taint,
)
from vc_proto.meta import ObjectMeta
from vc_proto.vocabulary import HOSTNAME_LABEL

SIMULATED_LABEL = "tephra.dev/simulated"


def _containers(pod: Pod) -> list[str]:
    return [c.name for c in (pod.spec.containers if pod.spec else None) or []] or ["main"]


def _conditions(now: str, *, ready: bool) -> list[PodCondition]:
    status = "True" if ready else "False"
    return [
        PodCondition(type="PodScheduled", status="True", last_transition_time=now),
        PodCondition(type="Initialized", status="True", last_transition_time=now),
        PodCondition(type="ContainersReady", status=status, last_transition_time=now),
        PodCondition(type="Ready", status=status, last_transition_time=now),
    ]


def running_status(pod: Pod, *, now: str, host_ip: str) -> PodStatus:
    statuses = [
        ContainerStatus(name=name, ready=True, started=True, state=ContainerState(running={"startedAt": now}))
        for name in _containers(pod)
    ]
    return PodStatus(
        phase="Running",
        conditions=_conditions(now, ready=True),
        host_ip=host_ip,
        pod_ip=host_ip,
        start_time=now,
        container_statuses=statuses,
        qos_class=(pod.status.qos_class if pod.status else None),
    )


def finished_status(
    pod: Pod, *, now: str, exit_code: int, reason: str | None = None, message: str | None = None
) -> PodStatus:
    start = (pod.status.start_time if pod.status else None) or now
    term_reason = "Completed" if exit_code == 0 else "Error"
    statuses = [
        ContainerStatus(
            name=name,
            ready=False,
            started=False,
            state=ContainerState(
                terminated=ContainerStateTerminated(
                    exit_code=exit_code, reason=term_reason, started_at=start, finished_at=now
                )
            ),
        )
        for name in _containers(pod)
    ]
    base = pod.status or PodStatus()
    return PodStatus(
        phase="Succeeded" if exit_code == 0 else "Failed",
        conditions=_conditions(now, ready=False),
        host_ip=base.host_ip,
        pod_ip=base.pod_ip,
        start_time=start,
        container_statuses=statuses,
        reason=reason,
        message=message,
    )


def rejected_status(pod: Pod, *, now: str, reason: str, message: str) -> PodStatus:
    """A pod the kubelet would not start (its admission refused it): Failed, no container ever ran."""
    return PodStatus(
        phase="Failed",
        conditions=[PodCondition(type="PodScheduled", status="True", last_transition_time=now)],
        reason=reason,
        message=message,
        qos_class=(pod.status.qos_class if pod.status else None),
    )


def node_object(
    name: str,
    *,
    capacity: Mapping[str, str],
    ready: bool,
    now: str,
    existing: Node | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Node:
    condition = NodeCondition(
        type="Ready",
        status="True" if ready else "False",
        reason="KubeletReady" if ready else "NodeStatusUnknown",
        message="simulated kubelet is posting ready status" if ready else "simulated node made NotReady",
        last_heartbeat_time=now,
        last_transition_time=now,
    )
    taints = (
        []
        if ready
        else [
            Taint(key="node.kubernetes.io/not-ready", effect="NoSchedule"),
            Taint(key="node.kubernetes.io/not-ready", effect="NoExecute", time_added=now),
        ]
    )
    meta = existing.metadata if existing else ObjectMeta(name=name)
    labels = {**(meta.labels or {}), **(labels or {}), HOSTNAME_LABEL: name, SIMULATED_LABEL: "true"}
    other_taints = [
        t
        for t in ((existing.spec.taints if existing and existing.spec else None) or [])
        if t.key != "node.kubernetes.io/not-ready"
    ]
    return Node(
        api_version=CORE_V1,
        metadata=ObjectMeta(
            name=name,
            labels=labels,
            annotations={**(meta.annotations or {}), **annotations} if annotations else meta.annotations,
            uid=meta.uid,
            resource_version=meta.resource_version,
            creation_timestamp=meta.creation_timestamp,
            generation=meta.generation,
        ),
        spec=NodeSpec(
            unschedulable=existing.spec.unschedulable if existing and existing.spec else None,
            taints=(other_taints + taints) or None,
        ),
        status=NodeStatus(
            capacity={**capacity},
            allocatable={**capacity},
            phase="Running",
            conditions=[condition],
            addresses=[{"type": "Hostname", "address": name}],
            node_info={"kubeletVersion": "tephra-node-sim", "operatingSystem": "linux", "architecture": "amd64"},
        ),
    )


def node_ready(node: Node) -> bool:
    for cond in (node.status.conditions if node.status else None) or []:
        if cond.type == "Ready":
            return cond.status == "True"
    return False
