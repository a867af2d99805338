"""Views of the Kubernetes objects the scheduler reads: only the fields that matter, camelCase keys.

Unknown fields are ignored (msgspec drops them); a field of the wrong type is a decode error that the
loader reports with the document index and the field path.
"""

from __future__ import annotations

import msgspec

Quantities = dict[str, str | int | float]


class OwnerReference(msgspec.Struct, rename="camel", kw_only=True):
    kind: str = ""
    name: str = ""


class ObjectMeta(msgspec.Struct, rename="camel", kw_only=True):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    owner_references: list[OwnerReference] = []


class Taint(msgspec.Struct, rename="camel", kw_only=True):
    key: str = ""
    value: str = ""
    effect: str = ""


class NodeSpec(msgspec.Struct, rename="camel", kw_only=True):
    taints: list[Taint] = []
    unschedulable: bool = False


class NodeStatus(msgspec.Struct, rename="camel", kw_only=True):
    allocatable: Quantities = {}


class Node(msgspec.Struct, rename="camel", kw_only=True):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


class SelectorRequirement(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    key: str
    operator: str
    values: tuple[str, ...] = ()


class NodeSelectorTerm(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    match_expressions: tuple[SelectorRequirement, ...] = ()
    match_fields: tuple[SelectorRequirement, ...] = ()


class NodeSelector(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    node_selector_terms: tuple[NodeSelectorTerm, ...] = ()


class PreferredTerm(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    weight: int
    preference: NodeSelectorTerm


class NodeAffinity(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: tuple[PreferredTerm, ...] = ()


class LabelSelector(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    match_labels: dict[str, str] = {}
    match_expressions: tuple[SelectorRequirement, ...] = ()


class PodAffinityTerm(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    label_selector: LabelSelector | None = None  # None matches no pod (Kubernetes)
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    topology_key: str = ""
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


class WeightedPodAffinityTerm(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    weight: int
    pod_affinity_term: PodAffinityTerm


class PodAffinity(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    required_during_scheduling_ignored_during_execution: tuple[PodAffinityTerm, ...] = ()
    preferred_during_scheduling_ignored_during_execution: tuple[WeightedPodAffinityTerm, ...] = ()


class Affinity(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None  # Honor (default) | Ignore
    node_taints_policy: str | None = None  # Ignore (default) | Honor
    match_label_keys: tuple[str, ...] = ()


class Toleration(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


class ResourceRequirements(msgspec.Struct, rename="camel", kw_only=True):
    requests: Quantities = {}
    limits: Quantities = {}


class ContainerPort(msgspec.Struct, rename="camel", kw_only=True):
    container_port: int = 0
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = msgspec.field(default="", name="hostIP")


class Container(msgspec.Struct, rename="camel", kw_only=True):
    name: str = ""
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    ports: list[ContainerPort] = []


class PersistentVolumeClaimVolumeSource(msgspec.Struct, rename="camel", kw_only=True):
    claim_name: str = ""


class Volume(msgspec.Struct, rename="camel", kw_only=True):
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None


class PodSpec(msgspec.Struct, rename="camel", kw_only=True):
    scheduler_name: str = "default-scheduler"
    node_name: str = ""
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str = ""
    node_selector: dict[str, str] = {}
    affinity: Affinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    host_network: bool = False
    containers: list[Container] = []
    init_containers: list[Container] = []
    overhead: Quantities = {}
    volumes: list[Volume] = []


class PodStatus(msgspec.Struct, rename="camel", kw_only=True):
    phase: str = "Pending"


class Pod(msgspec.Struct, rename="camel", kw_only=True):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


class Condition(msgspec.Struct, rename="camel", kw_only=True):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    transition_id: str = ""


class NetworkTopology(msgspec.Struct, rename="camel", kw_only=True):
    mode: str = ""
    highest_tier_allowed: int | None = None


class PodGroupSpec(msgspec.Struct, rename="camel", kw_only=True):
    network_topology: NetworkTopology | None = None
    min_member: int = 0
    min_task_member: dict[str, int] = {}
    min_resources: Quantities | None = None
    queue: str = ""
    priority_class_name: str = ""


class PodGroupStatus(msgspec.Struct, rename="camel", kw_only=True):
    phase: str = ""
    conditions: list[Condition] = []


class PodGroup(msgspec.Struct, rename="camel", kw_only=True):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)


class Guarantee(msgspec.Struct, rename="camel", kw_only=True):
    resource: Quantities = {}


class QueueSpec(msgspec.Struct, rename="camel", kw_only=True):
    weight: int = 1
    capability: Quantities = {}
    deserved: Quantities = {}
    guarantee: Guarantee = msgspec.field(default_factory=Guarantee)
    reclaimable: bool | None = None
    parent: str = ""
    priority: int = 0


class QueueStatus(msgspec.Struct, rename="camel", kw_only=True):
    state: str = ""


class Queue(msgspec.Struct, rename="camel", kw_only=True):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: QueueSpec = msgspec.field(default_factory=QueueSpec)
    status: QueueStatus = msgspec.field(default_factory=QueueStatus)


class Namespace(msgspec.Struct, rename="camel", kw_only=True):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


class ResourceQuotaSpec(msgspec.Struct, rename="camel", kw_only=True):
    hard: Quantities = {}


class ResourceQuotaStatus(msgspec.Struct, rename="camel", kw_only=True):
    hard: Quantities = {}
    used: Quantities | None = None  # None: no quota controller wrote it (Tephra counts the pods itself)


class ResourceQuota(msgspec.Struct, rename="camel", kw_only=True):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceQuotaSpec = msgspec.field(default_factory=ResourceQuotaSpec)
    status: ResourceQuotaStatus = msgspec.field(default_factory=ResourceQuotaStatus)


class PodDisruptionBudgetSpec(msgspec.Struct, rename="camel", kw_only=True):
    selector: LabelSelector | None = None
    min_available: int | str | None = None
    max_unavailable: int | str | None = None


class PodDisruptionBudgetStatus(msgspec.Struct, rename="camel", kw_only=True):
    disruptions_allowed: int | None = None  # None: no disruption controller wrote it
    disrupted_pods: dict[str, str] = {}


class PodDisruptionBudget(msgspec.Struct, rename="camel", kw_only=True):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = msgspec.field(default_factory=PodDisruptionBudgetStatus)


class PersistentVolumeClaimSpec(msgspec.Struct, rename="camel", kw_only=True):
    volume_name: str = ""
    storage_class_name: str | None = None


class PersistentVolumeClaimStatus(msgspec.Struct, rename="camel", kw_only=True):
    phase: str = ""


class PersistentVolumeClaim(msgspec.Struct, rename="camel", kw_only=True):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = msgspec.field(default_factory=PersistentVolumeClaimStatus)


class VolumeNodeAffinity(msgspec.Struct, rename="camel", kw_only=True):
    required: NodeSelector | None = None


class PersistentVolumeSpec(msgspec.Struct, rename="camel", kw_only=True):
    node_affinity: VolumeNodeAffinity | None = None


class PersistentVolume(msgspec.Struct, rename="camel", kw_only=True):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeSpec = msgspec.field(default_factory=PersistentVolumeSpec)


class PriorityClass(msgspec.Struct, rename="camel", kw_only=True):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: int = 0
    global_default: bool = False
    preemption_policy: str = ""


# topology.volcano.sh/v1alpha1 HyperNode (the network-topology-aware plugin's tree).
class HyperNodeExactMatch(msgspec.Struct, rename="camel", kw_only=True):
    name: str = ""


class HyperNodeRegexMatch(msgspec.Struct, rename="camel", kw_only=True):
    pattern: str = ""


class HyperNodeSelector(msgspec.Struct, rename="camel", kw_only=True):
    exact_match: HyperNodeExactMatch | None = None
    regex_match: HyperNodeRegexMatch | None = None
    label_match: LabelSelector | None = None


class HyperNodeMember(msgspec.Struct, rename="camel", kw_only=True):
    type: str = ""
    selector: HyperNodeSelector = msgspec.field(default_factory=HyperNodeSelector)


class HyperNodeSpec(msgspec.Struct, rename="camel", kw_only=True):
    tier: int = 0
    members: list[HyperNodeMember] = []


class HyperNode(msgspec.Struct, rename="camel", kw_only=True):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: HyperNodeSpec = msgspec.field(default_factory=HyperNodeSpec)
