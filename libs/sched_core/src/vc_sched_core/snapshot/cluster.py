"""The cluster snapshot a cycle runs on: parsed, immutable views of nodes, pods, podgroups, queues."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

import msgspec

from vc_core.resources import Resources
from vc_sched_core.snapshot.kube import (
    Affinity,
    LabelSelector,
    NodeSelector,
    Taint,
    Toleration,
    TopologySpreadConstraint,
)
from vc_sched_core.snapshot.vgpu import VGPUInventory, VGPUPodRequest

# A host port a pod takes on its node: (protocol, host IP or "" for every address, port).
HostPort = tuple[str, str, int]

GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
# The annotations a scheduler reads from a pod view: its PodGroup (both spellings), task spec and
# priority, whether it is preemptable, and the GPUs a bind assigned (deviceshare). A pod view keeps only
# these: the others a pod carries (its task index, job version, the bound-by stamp) would make each
# pod's map its own, one dict per pod in a cache of a million, where a gang's pods share one without
# them. Code that reads another key of `PodObj.annotations` adds it here (a test checks the readers'
# keys are in it).
POD_ANNOTATIONS_READ: Final = frozenset(
    {
        GROUP_NAME_ANNOTATION,
        "scheduling.volcano.sh/group-name",
        "volcano.sh/task-spec",
        "volcano.sh/task-priority",
        "volcano.sh/preemptable",
        "volcano.sh/vgpu-ids-new",
    }
)


def read_annotations(annotations: Mapping[str, str]) -> dict[str, str]:
    """The annotations of `annotations` a scheduler reads (POD_ANNOTATIONS_READ)."""
    return {key: value for key, value in annotations.items() if key in POD_ANNOTATIONS_READ}


DEFAULT_QUEUE = "default"
ROOT_QUEUE = "root"


@dataclass(frozen=True, slots=True)
class PodGroupCondition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    transition_id: str = ""


@dataclass(frozen=True, slots=True)
class NodeObj:
    name: str
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    allocatable: Resources
    max_pods: int | None  # None: the node sets no `pods` limit
    vgpu: VGPUInventory | None = None  # shared GPUs the vGPU device plugin registered (snapshot/vgpu.py)


class PodObj(msgspec.Struct, frozen=True, gc=False):
    """A pod as a cycle reads it. A msgspec Struct, not a dataclass: the scheduler's cache makes one per
    change of any pod in the cluster, and a Struct is built about ten times faster than a frozen
    dataclass (which sets each of its 22 fields through object.__setattr__). Never tracked by the
    garbage collector: nothing it holds refers back to it, and a full collection then skips a million
    of them at the seeds' scale. Change fields with `msgspec.structs.replace`."""

    name: str
    namespace: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    scheduler_name: str
    node_name: str
    priority: int | None
    priority_class_name: str
    preemption_policy: str
    node_selector: dict[str, str]
    affinity: Affinity | None
    tolerations: tuple[Toleration, ...]
    requests: Resources
    phase: str
    deleting: bool
    creation: str = ""
    order: int = 0  # position in the snapshot, the last ordering tie-break
    topology_spread: tuple[TopologySpreadConstraint, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    vgpu: VGPUPodRequest | None = None  # what the pod asks of shared GPUs (snapshot/vgpu.py)
    claims: tuple[str, ...] = ()  # the PersistentVolumeClaims its volumes mount, in its namespace

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def group_name(self) -> str | None:
        return self.annotations.get(GROUP_NAME_ANNOTATION)


@dataclass(frozen=True, slots=True)
class NetworkTopologyObj:
    """A PodGroup's spec.networkTopology: `hard` (the CRD default) or `soft`; None: no tier bound."""

    mode: str
    highest_tier_allowed: int | None


@dataclass(frozen=True, slots=True)
class HyperNodeMemberObj:
    """One member of a HyperNode: a Node or HyperNode by exact name, name regex, or (nodes) labels."""

    type: str
    exact: str | None = None
    pattern: str | None = None
    labels: LabelSelector | None = None


@dataclass(frozen=True, slots=True)
class HyperNodeObj:
    name: str
    tier: int
    members: tuple[HyperNodeMemberObj, ...] = ()


@dataclass(frozen=True, slots=True)
class PodGroupObj:
    name: str
    namespace: str
    labels: dict[str, str]
    annotations: dict[str, str]
    min_member: int
    min_task_member: dict[str, int]
    min_resources: Resources | None
    queue: str
    priority_class_name: str
    phase: str
    conditions: tuple[PodGroupCondition, ...] = ()
    creation: str = ""
    order: int = 0
    quota_request: Resources | None = None  # spec.minResources as written (quota names), for resourcequota
    network_topology: NetworkTopologyObj | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class QueueObj:
    name: str
    weight: int = 1
    capability: Resources = field(default_factory=dict)
    deserved: Resources = field(default_factory=dict)
    guarantee: Resources = field(default_factory=dict)
    reclaimable: bool | None = None
    parent: str = ""
    priority: int = 0
    state: str = "Open"
    annotations: dict[str, str] = field(default_factory=dict)
    creation: str = ""
    order: int = 0


@dataclass(frozen=True, slots=True)
class PriorityClassObj:
    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = ""


@dataclass(frozen=True, slots=True)
class ResourceQuotaObj:
    name: str
    namespace: str
    hard: Resources  # by quota name: requests.cpu, cpu, limits.memory, pods, count/pods, ...
    used: Resources | None  # status.used; None: not written (the resourcequota plugin counts pods)


@dataclass(frozen=True, slots=True)
class PodDisruptionBudgetObj:
    name: str
    namespace: str
    selector: LabelSelector | None
    min_available: int | str | None
    max_unavailable: int | str | None
    disruptions_allowed: int | None  # status; None: not written (the pdb plugin derives it)
    disrupted_pods: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaimObj:
    name: str
    namespace: str
    volume_name: str  # spec.volumeName: the PersistentVolume it is bound to; "": unbound

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class PersistentVolumeObj:
    name: str
    node_affinity: NodeSelector | None  # spec.nodeAffinity.required; None: usable from any node


@dataclass(frozen=True, slots=True)
class NamespaceObj:
    name: str
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class QueueSums:
    """One queue's figures over PodGroups a snapshot leaves out, in the units of Resources (cpu in cores,
    memory in bytes): Σ requests of their placed and pending pods, of their placed pods, and the unplaced
    minResources of admitted ones (as the queue plugins sum the jobs they see)."""

    request: Mapping[str, float] = field(default_factory=dict)
    allocated: Mapping[str, float] = field(default_factory=dict)
    reserved: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Outside:
    """What a partial snapshot leaves out but whole-cluster rules need (one scheduler instance's share
    of a cluster shared by several): the total allocatable and usage of the nodes it leaves out, and
    per queue the sums of the PodGroups it leaves out. A session adds them to its own totals, so fair
    share, quotas and the cluster's size are the whole cluster's. A full snapshot has none."""

    allocatable: Mapping[str, float] = field(default_factory=dict)
    used: Mapping[str, float] = field(default_factory=dict)
    queues: Mapping[str, QueueSums] = field(default_factory=dict)

    def names(self) -> set[str]:
        names = set(self.allocatable) | set(self.used)
        for sums in self.queues.values():
            names.update(sums.request, sums.allocated, sums.reserved)
        return names


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    nodes: tuple[NodeObj, ...] = ()
    pods: tuple[PodObj, ...] = ()
    podgroups: tuple[PodGroupObj, ...] = ()
    queues: tuple[QueueObj, ...] = ()
    priority_classes: tuple[PriorityClassObj, ...] = ()
    # Namespaces with their labels (namespaceSelector of pod affinity terms); a namespace not listed
    # has only the label Kubernetes gives every namespace, kubernetes.io/metadata.name.
    namespaces: tuple[NamespaceObj, ...] = ()
    resource_quotas: tuple[ResourceQuotaObj, ...] = ()
    pod_disruption_budgets: tuple[PodDisruptionBudgetObj, ...] = ()
    hypernodes: tuple[HyperNodeObj, ...] = ()
    persistent_volume_claims: tuple[PersistentVolumeClaimObj, ...] = ()
    persistent_volumes: tuple[PersistentVolumeObj, ...] = ()
    outside: Outside | None = None  # set when the snapshot is one instance's share of the cluster
