"""Every object kind Tephra stores: its type, apiVersion, plural and scope, in one table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from vc_proto.batch import BATCH_V1ALPHA1, Job
from vc_proto.bus import BUS_V1ALPHA1, Command
from vc_proto.core import (
    CORE_V1,
    NETWORKING_V1,
    SCHEDULING_K8S_V1,
    ConfigMap,
    NetworkPolicy,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PriorityClass,
    ResourceQuota,
    Secret,
    Service,
)
from vc_proto.cronjob import CronJob
from vc_proto.flow import FLOW_V1ALPHA1, JobFlow, JobTemplate
from vc_proto.kube_event import Event
from vc_proto.policy import POLICY_V1, POLICY_V1BETA1, PodDisruptionBudget
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, Queue
from vc_proto.topology import TOPOLOGY_V1ALPHA1, HyperNode

KubeObject = (
    Job
    | PodGroup
    | Queue
    | Command
    | Pod
    | Node
    | Service
    | ConfigMap
    | Secret
    | NetworkPolicy
    | PriorityClass
    | JobTemplate
    | JobFlow
    | CronJob
    | Event
    | HyperNode
    | ResourceQuota
    | PodDisruptionBudget
    | PersistentVolumeClaim
    | PersistentVolume
)


@dataclass(frozen=True, slots=True)
class Kind:
    kind: str
    api_version: str
    plural: str
    namespaced: bool
    type: type[KubeObject]
    # Earlier apiVersions of the same object, newest first, that older apiservers serve instead of
    # `api_version` (policy/v1beta1 PodDisruptionBudgets before Kubernetes 1.21): documents in them are
    # accepted as they are, and the kube backend uses the first its apiserver serves when it lacks ours.
    older_versions: tuple[str, ...] = ()

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]


KINDS: Final[dict[str, Kind]] = {
    k.kind: k
    for k in (
        Kind("Job", BATCH_V1ALPHA1, "jobs", True, Job),
        Kind("PodGroup", SCHEDULING_V1BETA1, "podgroups", True, PodGroup),
        Kind("Queue", SCHEDULING_V1BETA1, "queues", False, Queue),
        Kind("Command", BUS_V1ALPHA1, "commands", True, Command),
        Kind("Pod", CORE_V1, "pods", True, Pod),
        Kind("Node", CORE_V1, "nodes", False, Node),
        Kind("Service", CORE_V1, "services", True, Service),
        Kind("ConfigMap", CORE_V1, "configmaps", True, ConfigMap),
        Kind("Secret", CORE_V1, "secrets", True, Secret),
        Kind("NetworkPolicy", NETWORKING_V1, "networkpolicies", True, NetworkPolicy),
        Kind("PriorityClass", SCHEDULING_K8S_V1, "priorityclasses", False, PriorityClass),
        Kind("JobTemplate", FLOW_V1ALPHA1, "jobtemplates", True, JobTemplate),
        Kind("JobFlow", FLOW_V1ALPHA1, "jobflows", True, JobFlow),
        Kind("CronJob", BATCH_V1ALPHA1, "cronjobs", True, CronJob),
        Kind("Event", CORE_V1, "events", True, Event),
        Kind("HyperNode", TOPOLOGY_V1ALPHA1, "hypernodes", False, HyperNode),
        Kind("ResourceQuota", CORE_V1, "resourcequotas", True, ResourceQuota),
        Kind("PodDisruptionBudget", POLICY_V1, "poddisruptionbudgets", True, PodDisruptionBudget, (POLICY_V1BETA1,)),
        Kind("PersistentVolumeClaim", CORE_V1, "persistentvolumeclaims", True, PersistentVolumeClaim),
        Kind("PersistentVolume", CORE_V1, "persistentvolumes", False, PersistentVolume),
    )
}


def accepts(kind: Kind, api_version: object) -> bool:
    """Whether a document of `kind` may carry this apiVersion: the kind's own, or an older one it lists."""
    return api_version == kind.api_version or api_version in kind.older_versions


def kind_of(obj_type: type[KubeObject]) -> Kind:
    """The table row for a type."""
    for kind in KINDS.values():
        if kind.type is obj_type:
            return kind
    raise KeyError(obj_type.__name__)
