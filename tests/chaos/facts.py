"""PURE: the few facts the invariants need, read from recorded objects (Kubernetes-shaped JSON).

Lenient on purpose: a recorded value is whatever the store held, so a missing or malformed field
reads as absent instead of raising (admission and the services' own guards decide what is valid).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from vc_core.errors import InvalidObject
from vc_core.quantity import parse_quantity
from vc_core.resources import PODS, Resources, add, maximum
from vc_proto.subjects import object_key

TERMINAL_POD_PHASES = frozenset({"Succeeded", "Failed"})
TERMINAL_JOB_PHASES = frozenset({"Completed", "Failed", "Terminated", "Aborted"})
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
QUEUE_ANNOTATION = "volcano.sh/queue-name"


@dataclass(frozen=True, slots=True)
class PodFacts:
    uid: str
    node: str  # "" while unbound
    phase: str
    deleting: bool
    requests: Mapping[str, Fraction]  # including pods: 1
    queue: str
    group: str  # the PodGroup's key, "" when the pod has none

    @property
    def occupying(self) -> bool:
        """Holds room on its node and in its queue: bound and not terminal (a deleting pod still runs)."""
        return bool(self.node) and self.phase not in TERMINAL_POD_PHASES

    @property
    def active_member(self) -> bool:
        """Counts towards its gang: occupying and not being torn down."""
        return self.occupying and not self.deleting


def _section(obj: Mapping[str, Any] | None, name: str) -> Mapping[str, Any]:
    value = (obj or {}).get(name)
    return value if isinstance(value, Mapping) else {}


def quantities(raw: object) -> Resources:
    """A ResourceList; entries that are not quantities are left out."""
    out: Resources = {}
    if isinstance(raw, Mapping):
        for name, value in raw.items():
            try:
                out[str(name)] = parse_quantity(value)
            except InvalidObject:  # a malformed amount is absent (see the module docstring)
                continue
    return out


def pod_facts(obj: Mapping[str, Any]) -> PodFacts:
    meta, spec, status = _section(obj, "metadata"), _section(obj, "spec"), _section(obj, "status")
    annotations, labels = _section(meta, "annotations"), _section(meta, "labels")
    namespace = str(meta.get("namespace") or "default")
    group = annotations.get(GROUP_ANNOTATION)
    return PodFacts(
        uid=str(meta.get("uid") or ""),
        node=str(spec.get("nodeName") or ""),
        phase=str(status.get("phase") or "Pending"),
        deleting=bool(meta.get("deletionTimestamp")),
        requests=pod_requests(spec),
        queue=str(annotations.get(QUEUE_ANNOTATION) or labels.get(QUEUE_ANNOTATION) or ""),
        group=object_key(namespace, str(group)) if group else "",
    )


def pod_requests(spec: Mapping[str, Any]) -> Resources:
    """Σ containers (requests, else limits), at least the largest init container, plus overhead and
    one pod slot: what a kubelet admits the pod against (Volcano's InitResreq)."""

    def container(c: object) -> Resources:
        resources = _section(c if isinstance(c, Mapping) else {}, "resources")
        return {**quantities(resources.get("limits")), **quantities(resources.get("requests"))}

    containers = spec.get("containers")
    total = add(*(container(c) for c in containers)) if isinstance(containers, list) else {}
    inits = spec.get("initContainers")
    for init in inits if isinstance(inits, list) else ():
        total = maximum(total, container(init))
    total = add(total, quantities(spec.get("overhead")))
    total[PODS] = Fraction(1)
    return total


def node_allocatable(obj: Mapping[str, Any]) -> Resources:
    return quantities(_section(obj, "status").get("allocatable"))


def queue_capability(obj: Mapping[str, Any]) -> Resources:
    return quantities(_section(obj, "spec").get("capability"))


def queue_parent(obj: Mapping[str, Any]) -> str:
    return str(_section(obj, "spec").get("parent") or "")


def min_member(obj: Mapping[str, Any]) -> int:
    value = _section(obj, "spec").get("minMember")
    return value if isinstance(value, int) else 0


def job_phase(obj: Mapping[str, Any]) -> str:
    return str(_section(_section(obj, "status"), "state").get("phase") or "")


def uid_of(obj: Mapping[str, Any] | None) -> str:
    return str(_section(obj, "metadata").get("uid") or "")


def name_of(key: str) -> str:
    """The object name of a KV key (`<namespace>.<name>`; names have `.` escaped as `_`)."""
    return key.partition(".")[2]
