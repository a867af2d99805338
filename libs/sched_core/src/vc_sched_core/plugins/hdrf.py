"""Hierarchical DRF (drf with `enableHierarchy: true`, Volcano drf.go's hierarchicalNode tree).

Queues sit in a weighted tree (queue annotations `volcano.sh/hierarchy` = "root/a/b" and
`volcano.sh/hierarchy-weights` = "1/2/3", else derived from `spec.parent` and `spec.weight`); jobs are
leaves. An inner node's allocation is its children's, each unsaturated child scaled to the smallest
dominant share among them; queues compare top-down by share / weight, saturated subtrees last.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from vc_sched_core.framework.model import QueueInfo
from vc_sched_core.framework.resources import Vector
from vc_sched_core.plugins.shares import dominant_share
from vc_sched_core.snapshot.cluster import ROOT_QUEUE

HIERARCHY_KEY = "volcano.sh/hierarchy"
WEIGHTS_KEY = "volcano.sh/hierarchy-weights"


@dataclass(slots=True, eq=False)
class HNode:
    name: str
    weight: float
    allocated: Vector
    request: Vector
    share: float = 0.0
    saturated: bool = False
    children: dict[str, HNode] | None = field(default_factory=dict)  # None: a job leaf

    def clone(self) -> HNode:
        kids = None if self.children is None else {k: c.clone() for k, c in self.children.items()}
        return HNode(
            self.name, self.weight, self.allocated.copy(), self.request.copy(), self.share, self.saturated, kids
        )


def queue_paths(queues: Mapping[str, QueueInfo]) -> dict[str, tuple[list[str], list[float]]]:
    """Per queue: the path from root and the weight of each step (Volcano BuildEffectiveQueueHierarchy)."""
    out: dict[str, tuple[list[str], list[float]]] = {ROOT_QUEUE: ([ROOT_QUEUE], [1.0])}

    def build(name: str, seen: frozenset[str]) -> tuple[list[str], list[float]]:
        if name in out:
            return out[name]
        queue = queues[name]
        annotated = queue.spec.annotations.get(HIERARCHY_KEY), queue.spec.annotations.get(WEIGHTS_KEY)
        if annotated[0] and annotated[1]:
            out[name] = (annotated[0].split("/"), [_weight(w) for w in annotated[1].split("/")])
            return out[name]
        parent = queue.spec.parent or ROOT_QUEUE
        if parent not in queues or parent in seen:
            parent = ROOT_QUEUE
        paths, weights = build(parent, seen | {name})
        out[name] = ([*paths, name], [*weights, float(max(queue.weight, 1))])
        return out[name]

    for name in queues:
        build(name, frozenset())
    return out


def _weight(text: str) -> float:
    try:
        return max(float(text), 1.0)  # weights below 1 count as 1
    except ValueError:
        return 1.0


class HdrfTree:
    def __init__(self, total: Vector, root: HNode | None = None) -> None:
        self.total = total
        zero = np.zeros_like(total)
        self.root = root or HNode(ROOT_QUEUE, 1.0, zero.copy(), zero.copy())

    def clone(self) -> HdrfTree:
        return HdrfTree(self.total, self.root.clone())

    def place(self, job: str, allocated: Vector, request: Vector, path: tuple[list[str], list[float]]) -> None:
        """Put (or refresh) a job leaf under its queue's path, creating inner nodes as needed."""
        node = self.root
        names, weights = path
        for i in range(1, len(names)):
            kids = node.children if node.children is not None else {}
            if names[i] not in kids:
                weight = weights[i] if i < len(weights) else 1.0
                kids[names[i]] = HNode(names[i], weight, np.zeros_like(self.total), np.zeros_like(self.total))
            node = kids[names[i]]
        if node.children is not None:
            share = dominant_share(allocated, self.total)
            node.children[job] = HNode(job, 1.0, allocated.copy(), request.copy(), share, False, None)

    def update(self, total_allocated: Vector) -> None:
        demanding = total_allocated < self.total
        self._update(self.root, demanding)

    def _update(self, node: HNode, demanding: np.ndarray) -> None:
        if node.children is None:
            node.saturated = _saturated(node.allocated, node.request, demanding)
            return
        smallest = 1.0
        for child in node.children.values():
            self._update(child, demanding)
            if child.share != 0 and not child.saturated:
                smallest = min(smallest, dominant_share(child.allocated, self.total))
        allocated = np.zeros_like(self.total)
        for child in node.children.values():
            if child.share != 0:
                allocated += child.allocated if child.saturated else child.allocated * (smallest / child.share)
        node.allocated = allocated
        node.share = dominant_share(allocated, self.total)
        node.saturated = all(child.saturated for child in node.children.values())

    def compare(self, left: list[str], right: list[str]) -> float:
        """< 0 when the `left` queue should go first (Volcano compareQueues)."""
        lnode: HNode | None = self.root
        rnode: HNode | None = self.root
        depth = min(len(left), len(right))
        for i in range(depth):
            if lnode is None or rnode is None:
                return 0.0
            if lnode.saturated != rnode.saturated:
                return 1.0 if lnode.saturated else -1.0
            lvalue, rvalue = lnode.share / lnode.weight, rnode.share / rnode.weight
            if lvalue != rvalue:
                return lvalue - rvalue
            if i < depth - 1:
                lnode = (lnode.children or {}).get(left[i + 1])
                rnode = (rnode.children or {}).get(right[i + 1])
        return 0.0


def _saturated(allocated: Vector, request: Vector, demanding: np.ndarray) -> bool:
    """A job is saturated once it has all it asked for on some resource, or asks for a resource the
    cluster has fully handed out (Volcano resourceSaturated)."""
    used = allocated > 0
    full = used & (request > 0) & (allocated >= request)
    exhausted = used & ~demanding & (request > 0)
    return bool(full.any() or exhausted.any())
