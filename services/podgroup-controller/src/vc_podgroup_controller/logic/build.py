"""The PodGroup Volcano's pg controller builds for a plain pod (createNormalPodPGIfNotExist)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from vc_core import pod_requests as kube_rule
from vc_core.errors import InvalidObject
from vc_core.resources import Resources, format_resources, parse_resources, scale
from vc_podgroup_controller.logic.selection import group_name
from vc_proto.base import ResourceList
from vc_proto.batch import NetworkTopologySpec
from vc_proto.core import Pod
from vc_proto.meta import ObjectMeta, OwnerReference
from vc_proto.pod_shards import controller_ref
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, PodGroupSpec, PodGroupStatus
from vc_proto.vocabulary import GROUP_MIN_MEMBER_ANNOTATION, PREEMPTABLE_KEY, QUEUE_NAME_ANNOTATION, PodGroupPhase

COOLDOWN_TIME_KEY: Final = "volcano.sh/cooldown-time"
REVOCABLE_ZONE_KEY: Final = "volcano.sh/revocable-zone"
JDB_MIN_AVAILABLE_KEY: Final = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE_KEY: Final = "volcano.sh/jdb-max-unavailable"
TOPOLOGY_MODE_KEY: Final = "volcano.sh/network-topology-mode"
TOPOLOGY_TIER_KEY: Final = "volcano.sh/network-topology-highest-tier"
# Pod annotations (and, for the first two, labels) the PodGroup carries over for the scheduler's plugins.
COPIED_ANNOTATIONS: Final = (
    PREEMPTABLE_KEY,
    COOLDOWN_TIME_KEY,
    REVOCABLE_ZONE_KEY,
    JDB_MIN_AVAILABLE_KEY,
    JDB_MAX_UNAVAILABLE_KEY,
)
COPIED_LABELS: Final = (PREEMPTABLE_KEY, COOLDOWN_TIME_KEY)
INHERITED_PREFIX: Final = "volcano.sh/"


def min_member(owner_annotations: Mapping[str, str] | None) -> int:
    """The owner's `scheduling.volcano.sh/group-min-member`, else 1 (a bad value also means 1)."""
    text = (owner_annotations or {}).get(GROUP_MIN_MEMBER_ANNOTATION, "")
    return int(text) if text.isdigit() and int(text) > 0 else 1


def pod_requests(pod: Pod) -> Resources:
    """What the pod asks of a node, by Kubernetes' rule (an amount that does not parse counts as nothing:
    admission refuses such a pod, and one stored some other way must not stop its group)."""
    return kube_rule.pod_requests(pod.spec, lenient=True)


def build_podgroup(pod: Pod, *, owner_annotations: Mapping[str, str] | None = None) -> PodGroup:
    members = min_member(owner_annotations)
    min_resources: ResourceList = {**format_resources(scale(pod_requests(pod), members))}
    spec = PodGroupSpec(
        min_member=members,
        queue=(pod.metadata.annotations or {}).get(QUEUE_NAME_ANNOTATION) or None,
        priority_class_name=pod.spec.priority_class_name if pod.spec else None,
        min_resources=min_resources or None,
        network_topology=_network_topology(pod),
    )
    meta = ObjectMeta(
        name=group_name(pod),
        namespace=pod.metadata.namespace,
        owner_references=_owner_references(pod),
        annotations=_annotations(pod, owner_annotations) or None,
        labels=_copied(pod.metadata.labels, COPIED_LABELS) or None,
    )
    status = PodGroupStatus(phase=PodGroupPhase.PENDING.value)
    return PodGroup(api_version=SCHEDULING_V1BETA1, metadata=meta, spec=spec, status=status)


def _owner_references(pod: Pod) -> list[OwnerReference]:
    """The workload's refs when a controller owns the pod, else a controller ref to the pod itself."""
    if controller_ref(pod) is not None:
        return list(pod.metadata.owner_references or ())
    return [
        OwnerReference(
            api_version=pod.api_version,
            kind="Pod",
            name=pod.metadata.name or "",
            uid=pod.metadata.uid or "",
            controller=True,
        )
    ]


def _annotations(pod: Pod, owner_annotations: Mapping[str, str] | None) -> dict[str, str]:
    inherited = {k: v for k, v in (owner_annotations or {}).items() if k.startswith(INHERITED_PREFIX)}
    return inherited | _copied(pod.metadata.annotations, COPIED_ANNOTATIONS)


def _copied(source: Mapping[str, str] | None, keys: tuple[str, ...]) -> dict[str, str]:
    return {k: source[k] for k in keys if source and k in source}


def _network_topology(pod: Pod) -> NetworkTopologySpec | None:
    annotations = pod.metadata.annotations or {}
    tier = annotations.get(TOPOLOGY_TIER_KEY, "")
    if TOPOLOGY_MODE_KEY not in annotations and not tier:
        return None
    return NetworkTopologySpec(
        mode=annotations.get(TOPOLOGY_MODE_KEY) or "hard",
        highest_tier_allowed=int(tier) if tier.isdigit() else None,
    )


def _parse(raw: Mapping[str, str | int | float] | None) -> Resources:
    try:
        return parse_resources(raw)
    except InvalidObject:  # admission rejects bad quantities; count an unparsable one as nothing
        return {}
