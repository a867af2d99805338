"""Node-side matching helpers of the predicates and nodeorder plugins, vectorised over node rows.

Per task *template* (node selector, affinity, tolerations) every static answer over all nodes is
computed once and cached: tasks of one template share it (equivalence classes).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np
from numpy.typing import NDArray

from vc_sched_core.snapshot.cluster import NodeObj, PodObj
from vc_sched_core.snapshot.kube import NodeSelectorTerm, SelectorRequirement, Taint, Toleration

HARD_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
_keys = msgspec.json.Encoder()


class NodeSideKeys:
    """Per task class, the key of what node-side checks read (node selector, node affinity,
    tolerations, the PersistentVolumeClaims mounted): classes differing only in pod affinity or host
    ports share node-side answers."""

    def __init__(self) -> None:
        self._by_class: dict[bytes, bytes] = {}

    def of(self, class_key: bytes, pod: PodObj) -> bytes:
        key = self._by_class.get(class_key)
        if key is None:
            node_affinity = pod.affinity.node_affinity if pod.affinity else None
            node_side: tuple[object, ...] = (pod.node_selector, node_affinity, pod.tolerations)
            if pod.claims:  # which volumes: the claims of its namespace (volume_binding.py)
                node_side = (*node_side, pod.namespace, pod.claims)
            key = self._by_class[class_key] = _keys.encode(node_side)
        return key


UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")


class NodeLabels:
    """Column views of node labels: one object array per label key, built on first use."""

    def __init__(self, nodes: Sequence[NodeObj]) -> None:
        self.nodes = nodes
        self.names = np.array([n.name for n in nodes], dtype=object)
        self._columns: dict[str, NDArray[np.object_]] = {}

    def column(self, key: str) -> NDArray[np.object_]:
        if key not in self._columns:
            self._columns[key] = np.array([n.labels.get(key) for n in self.nodes], dtype=object)
        return self._columns[key]

    def match_selector(self, selector: dict[str, str]) -> NDArray[np.bool_]:
        ok = np.ones(len(self.nodes), dtype=bool)
        for key, value in selector.items():
            ok &= self.column(key) == value
        return ok

    def match_requirement(self, req: SelectorRequirement, *, field: bool = False) -> NDArray[np.bool_]:
        column = self.names if field else self.column(req.key)
        present = np.array([v is not None for v in column], dtype=bool)
        values = list(req.values)
        match req.operator:
            case "In":
                return present & np.isin(column, values)
            case "NotIn":
                return ~(present & np.isin(column, values))
            case "Exists":
                return present
            case "DoesNotExist":
                return ~present
            case "Gt" | "Lt":
                return _numeric(column, values, greater=req.operator == "Gt")
            case _:
                return np.zeros(len(self.nodes), dtype=bool)

    def match_term(self, term: NodeSelectorTerm) -> NDArray[np.bool_]:
        """Expressions of one term are ANDed; an empty term matches nothing (Kubernetes)."""
        if not term.match_expressions and not term.match_fields:
            return np.zeros(len(self.nodes), dtype=bool)
        ok = np.ones(len(self.nodes), dtype=bool)
        for req in term.match_expressions:
            ok &= self.match_requirement(req)
        for req in term.match_fields:
            ok &= self.match_requirement(req, field=req.key == "metadata.name")
        return ok


def _numeric(column: NDArray[np.object_], values: list[str], *, greater: bool) -> NDArray[np.bool_]:
    try:
        bound = int(values[0])
    except (IndexError, ValueError):
        return np.zeros(len(column), dtype=bool)
    out = np.zeros(len(column), dtype=bool)
    for i, value in enumerate(column):
        if isinstance(value, str) and value.lstrip("-").isdigit():
            out[i] = int(value) > bound if greater else int(value) < bound
    return out


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Kubernetes ToleratesTaint."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    return bool(toleration.key) and toleration.value == taint.value


def first_untolerated(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], effects: frozenset[str]
) -> Taint | None:
    for taint in taints:
        if taint.effect in effects and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def count_untolerated(taints: Sequence[Taint], tolerations: Sequence[Toleration], effect: str) -> int:
    return sum(1 for t in taints if t.effect == effect and not any(tolerates(tol, t) for tol in tolerations))
