"""nodeorder: Kubernetes scoring plugins with Volcano's weights (Volcano nodeorder.go).

Resource scores (least/most requested, balanced allocation) are per node and depend on what is
placed, computed vectorised over the candidate rows; node-affinity preference and PreferNoSchedule
taint scores are per template (cached) and normalised over the candidates like k8s NormalizeScore.
Inter-pod affinity (`podaffinity.weight`, 2) and topology spread (`podtopologyspread.weight`, 2)
scores look at other nodes' pods (pod_affinity.py, topology_spread.py) and are normalised over the
candidates too; a session whose pods use neither skips them. Image locality is not modelled (the
snapshot has no images): its weight is accepted and has nothing to score.
"""

from __future__ import annotations

from typing import ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from vc_sched_core.framework.interfaces import ExtensionPoint, PluginArgs
from vc_sched_core.framework.model import TaskInfo
from vc_sched_core.framework.nodes import NodeTable
from vc_sched_core.framework.session import Session
from vc_sched_core.plugins.node_filters import NodeLabels, NodeSideKeys, count_untolerated
from vc_sched_core.plugins.pod_topology import needs_topology_score, topology_of

NAME: Final = "nodeorder"
MAX_SCORE: Final = 100.0
BALANCED_RESOURCES: Final = ("cpu", "memory", "nvidia.com/gpu")
Rows = NDArray[np.intp]
Scores = NDArray[np.float64]


def _weight(args: PluginArgs, key: str, default: int) -> float:
    value = args.get(key, default)
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return float(default)


def requested_fraction(nodes: NodeTable, rows: Rows, request: NDArray[np.float64]) -> Scores:
    """(used + request) / allocatable per row and resource; 0 where nothing is allocatable."""
    return np.asarray((nodes.used[rows] + request) * nodes.inverse_allocatable[rows], dtype=np.float64)


def least_requested(fraction: Scores) -> Scores:
    """k8s LeastAllocated over cpu and memory (the first two columns), equal weights."""
    return np.asarray(np.clip(1.0 - fraction[:, :2], 0.0, 1.0).mean(axis=1) * MAX_SCORE, dtype=np.float64)


def most_requested(fraction: Scores) -> Scores:
    return np.asarray(np.clip(fraction[:, :2], 0.0, 1.0).mean(axis=1) * MAX_SCORE, dtype=np.float64)


def balanced_allocation(fraction: Scores, offered: NDArray[np.bool_]) -> Scores:
    """(1 - std of the requested fractions) * 100, over the resources each node offers."""
    fraction = np.clip(fraction, 0.0, 1.0)
    count = np.maximum(offered.sum(axis=1), 1)
    mean = (fraction * offered).sum(axis=1) / count
    std = np.sqrt((((fraction - mean[:, None]) ** 2) * offered).sum(axis=1) / count)
    return np.asarray((1.0 - std) * MAX_SCORE, dtype=np.float64)


def normalize(raw: Scores, *, reverse: bool = False) -> Scores:
    """k8s DefaultNormalizeScore: scale to 0..100 by the maximum; `reverse` for lower-is-better."""
    top = float(raw.max()) if raw.size else 0.0
    if top == 0:
        return np.full(raw.shape, MAX_SCORE if reverse else 0.0)
    scaled = raw * MAX_SCORE / top
    return MAX_SCORE - scaled if reverse else scaled


class NodeOrderPlugin:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        args = dict(args or {})
        self.least_weight = _weight(args, "leastrequested.weight", 1)
        self.most_weight = _weight(args, "mostrequested.weight", 0)
        self.balanced_weight = _weight(args, "balancedresource.weight", 1)
        self.affinity_weight = _weight(args, "nodeaffinity.weight", 2)
        self.taint_weight = _weight(args, "tainttoleration.weight", 3)
        self.pod_affinity_weight = _weight(args, "podaffinity.weight", 2)
        self.spread_weight = _weight(args, "podtopologyspread.weight", 2)
        self.session: Session | None = None  # set while the session's pods use pod affinity or spread
        self.nodes: NodeTable | None = None
        self.labels: NodeLabels | None = None
        self.balanced_dims: list[int] = []
        # Per template: raw affinity and taint scores over all nodes, and whether each has any non-zero.
        self.template_cache: dict[bytes, tuple[Scores, Scores, bool, bool]] = {}
        self.node_keys = NodeSideKeys()

    def on_session_open(self, ssn: Session) -> None:
        self.nodes = ssn.nodes
        self.labels = NodeLabels([n.obj for n in ssn.nodes.nodes])
        self.balanced_dims = [ssn.space.index[n] for n in BALANCED_RESOURCES if n in ssn.space.index]
        if (self.pod_affinity_weight or self.spread_weight) and needs_topology_score(ssn):
            self.session = ssn
        ssn.add_fn(ExtensionPoint.NODE_ORDER, NAME, self.node_order, node_local=True)
        # Normalised over the candidates: not node-local.
        ssn.add_fn(ExtensionPoint.BATCH_NODE_ORDER, NAME, self.batch_node_order)

    def on_session_close(self, ssn: Session) -> None:
        self.template_cache.clear()
        self.nodes = self.labels = None
        self.session = None

    def node_order(self, task: TaskInfo, rows: Rows) -> Scores:
        if self.nodes is None:
            return np.zeros(len(rows))
        scores = np.zeros(len(rows), dtype=np.float64)
        fraction = requested_fraction(self.nodes, rows, task.resreq)
        if self.least_weight:
            scores += self.least_weight * least_requested(fraction)
        if self.most_weight:
            scores += self.most_weight * most_requested(fraction)
        if self.balanced_weight:
            dims = self.balanced_dims
            offered = self.nodes.offered[rows][:, dims]
            scores += self.balanced_weight * balanced_allocation(fraction[:, dims], offered)
        return scores

    def batch_node_order(self, task: TaskInfo, rows: Rows) -> Scores:
        affinity_raw, taint_raw, any_affinity, any_taint = self._template_scores(task)
        # An all-zero raw score normalises to a constant (0, or 100 for taints): no per-row work.
        constant = self.taint_weight * MAX_SCORE if not any_taint else 0.0
        scores = np.full(len(rows), constant, dtype=np.float64)
        if self.affinity_weight and any_affinity:
            scores += self.affinity_weight * normalize(affinity_raw[rows])
        if self.taint_weight and any_taint:
            scores += self.taint_weight * normalize(taint_raw[rows], reverse=True)
        if self.session is not None:
            topology = topology_of(self.session)
            if self.pod_affinity_weight and (affinity := topology.affinity.score(task.pod, rows)) is not None:
                scores += self.pod_affinity_weight * affinity
            if self.spread_weight and (spread := topology.spread.score(task, rows)) is not None:
                scores += self.spread_weight * spread
        return scores

    def _template_scores(self, task: TaskInfo) -> tuple[Scores, Scores, bool, bool]:
        key = self.node_keys.of(task.class_key, task.pod)
        cached = self.template_cache.get(key)
        if cached is None:
            affinity, taints = self._preferred_affinity(task), self._soft_taints(task)
            cached = self.template_cache[key] = (affinity, taints, bool(affinity.any()), bool(taints.any()))
        return cached

    def _preferred_affinity(self, task: TaskInfo) -> Scores:
        if self.labels is None:
            raise RuntimeError("nodeorder used outside a session")
        raw = np.zeros(len(self.labels.nodes), dtype=np.float64)
        affinity = task.pod.affinity.node_affinity if task.pod.affinity else None
        for term in affinity.preferred_during_scheduling_ignored_during_execution if affinity else ():
            raw += term.weight * self.labels.match_term(term.preference)
        return raw

    def _soft_taints(self, task: TaskInfo) -> Scores:
        if self.labels is None:
            raise RuntimeError("nodeorder used outside a session")
        return np.array(
            [count_untolerated(n.taints, task.pod.tolerations, "PreferNoSchedule") for n in self.labels.nodes],
            dtype=np.float64,
        )
