"""Pod defaulting on CREATE (Volcano `pods/mutate/*`): the opt-in queue-allocation scheduling gate, and
the first matching *resource group* from the admission configuration.

A resource group (Volcano `--admission-conf` `resourceGroups[]`) selects pods by namespace, by
annotations, or, with no selector, by the pod annotation `volcano.sh/resource-group: <group>`, and
then merges node-selector labels, sets an affinity when the pod has none, appends tolerations and sets
the scheduler name. The front-end parses the configuration file into `ResourceGroup` values (Volcano's
`"key: value"` annotation strings become a mapping) and passes them in the context.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from msgspec.structs import replace

from vc_proto.base import Raw
from vc_proto.core import Pod, PodSpec, Toleration

RESOURCE_GROUP_ANNOTATION: Final = "volcano.sh/resource-group"
QUEUE_ALLOCATION_GATE: Final = "scheduling.volcano.sh/queue-allocation-gate"


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    name: str
    # "namespace" matches `namespaces`; "annotation" matches any of `annotations`; "" matches those
    # annotations or, failing that, `volcano.sh/resource-group: <name>`.
    match: Literal["namespace", "annotation", ""] = ""
    namespaces: tuple[str, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=dict)
    scheduler_name: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    affinity: Raw | None = None

    def selects(self, pod: Pod) -> bool:
        pod_annotations = pod.metadata.annotations or {}
        if self.match == "namespace":
            return (pod.metadata.namespace or "") in self.namespaces
        if any(pod_annotations.get(key) == value for key, value in self.annotations.items()):
            return True
        return self.match == "" and pod_annotations.get(RESOURCE_GROUP_ANNOTATION) == self.name


def mutate_pod(pod: Pod, *, resource_groups: tuple[ResourceGroup, ...] = (), queue_gate: bool = False) -> Pod:
    spec = pod.spec or PodSpec()
    if queue_gate:
        spec = _with_queue_gate(pod, spec)
    group = next((g for g in resource_groups if g.selects(pod)), None)
    if group is not None:
        spec = _apply_group(spec, group)
    return pod if spec == (pod.spec or PodSpec()) else replace(pod, spec=spec)


def _with_queue_gate(pod: Pod, spec: PodSpec) -> PodSpec:
    """Add the gate once, for pods that opt in with the annotation set to "true"."""
    if (pod.metadata.annotations or {}).get(QUEUE_ALLOCATION_GATE) != "true":
        return spec
    gates = list(spec.scheduling_gates or [])
    if any(gate.get("name") == QUEUE_ALLOCATION_GATE for gate in gates):
        return spec
    return replace(spec, scheduling_gates=[*gates, {"name": QUEUE_ALLOCATION_GATE}])


def _apply_group(spec: PodSpec, group: ResourceGroup) -> PodSpec:
    changes: dict[str, object] = {}
    if group.labels:
        changes["node_selector"] = {**(spec.node_selector or {}), **group.labels}
    if group.affinity is not None and spec.affinity is None:
        changes["affinity"] = dict(group.affinity)
    if group.tolerations:
        changes["tolerations"] = [*(spec.tolerations or []), *group.tolerations]
    if group.scheduler_name:
        changes["scheduler_name"] = group.scheduler_name
    return replace(spec, **changes)
