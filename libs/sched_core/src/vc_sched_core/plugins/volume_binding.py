"""The predicates plugin's volume check for pods mounting PersistentVolumeClaims (kube-scheduler's
VolumeBinding filter, without its binder).

A pod fits a node only when every claim it mounts exists in its namespace and is bound
(`spec.volumeName`) to a stored PersistentVolume whose `spec.nodeAffinity.required` selects the node
(no affinity: any node). A claim missing, unbound, or bound to a volume that is not stored makes the
pod wait on every node with kube-scheduler's message. Tephra provisions nothing and binds no claim:
no StorageClass, no dynamic provisioning, no WaitForFirstConsumer binding (docs/compatibility.md).

Only pods with claims reach this module; their verdict is part of the predicates' per-class static
verdict (the class key carries the namespace and claim names), so it is computed once per session
and class, vectorised over nodes.
"""

from __future__ import annotations

from typing import Final

import numpy as np
from numpy.typing import NDArray

from vc_sched_core.plugins.node_filters import NodeLabels
from vc_sched_core.snapshot.cluster import ClusterSnapshot, PersistentVolumeClaimObj, PersistentVolumeObj, PodObj

# kube-scheduler's volumebinding messages (pkg/scheduler/framework/plugins/volumebinding).
UNBOUND_IMMEDIATE_REASON: Final = "pod has unbound immediate PersistentVolumeClaims"
PV_NOT_EXIST_REASON: Final = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
NODE_CONFLICT_REASON: Final = "node(s) had volume node affinity conflict"


def claim_not_found(name: str) -> str:
    """kube-scheduler's PreFilter message for a claim that does not exist."""
    return f'persistentvolumeclaim "{name}" not found'


class VolumeIndex:
    """The session's claims by namespace/name and volumes by name."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.claims: dict[str, PersistentVolumeClaimObj] = {c.key: c for c in snapshot.persistent_volume_claims}
        self.volumes: dict[str, PersistentVolumeObj] = {v.name: v for v in snapshot.persistent_volumes}

    def check(self, pod: PodObj, labels: NodeLabels) -> tuple[NDArray[np.bool_], str] | None:
        """None when every node may hold the pod's volumes; else the nodes that may and the reason the
        others may not (the first failing claim's, in the pod's volume order)."""
        nodes = len(labels.nodes)
        allowed = np.ones(nodes, dtype=bool)
        for name in pod.claims:
            claim = self.claims.get(f"{pod.namespace}/{name}")
            if claim is None:
                return np.zeros(nodes, dtype=bool), claim_not_found(name)
            if not claim.volume_name:
                return np.zeros(nodes, dtype=bool), UNBOUND_IMMEDIATE_REASON
            volume = self.volumes.get(claim.volume_name)
            if volume is None:
                return np.zeros(nodes, dtype=bool), PV_NOT_EXIST_REASON
            if volume.node_affinity is not None:
                any_term = np.zeros(nodes, dtype=bool)
                for term in volume.node_affinity.node_selector_terms:
                    any_term |= labels.match_term(term)
                allowed &= any_term
        return None if allowed.all() else (allowed, NODE_CONFLICT_REASON)
