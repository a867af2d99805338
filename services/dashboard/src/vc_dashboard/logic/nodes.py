"""Nodes' allocation: the requests of the pods bound to each node and not finished, against allocatable.

`NodeUsage` is kept up to date from the pod watch, one change at a time (remove the old state's share,
add the new one's), so the nodes page never sums 100,000 pods per view.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Final

from vc_core import pod_requests as kube_rule
from vc_core.resources import PODS, Resources, add
from vc_dashboard.logic.amounts import human, ordered, parse_amounts, percent
from vc_proto.core import Container, Node, Pod, PodSpec

TERMINAL_POD_PHASES: Final = frozenset({"Succeeded", "Failed"})


def pod_requests(pod: Pod) -> Resources:
    """What the pod asks of its node (Kubernetes' rule; amounts that do not parse count as nothing), and
    one of the node's `pods`."""
    total = kube_rule.pod_requests(pod.spec, lenient=True)
    total[PODS] = Fraction(1)
    return total


def holding_node(pod: Pod) -> str | None:
    """The node the pod holds a share of: bound and not finished."""
    node = pod.spec.node_name if pod.spec else None
    phase = (pod.status.phase if pod.status else None) or "Pending"
    return None if not node or phase in TERMINAL_POD_PHASES else node


# Resource name -> thousandths of its unit: exact for every Kubernetes quantity (int64 milli-units) but
# nano-cores, and integer sums are a tenth of the cost of Fraction sums at 100,000 pods.
Milli = dict[str, int]
MAX_SHAPES: Final = 4_096


def _shape(spec: PodSpec | None) -> tuple[object, ...]:
    """What a pod's requests depend on, hashable: the pods of a task share one shape."""
    if spec is None:
        return ()

    def container(c: Container) -> tuple[object, ...]:
        r = c.resources
        return (tuple(sorted((r.limits or {}).items())), tuple(sorted((r.requests or {}).items()))) if r else ()

    return (
        tuple(container(c) for c in spec.containers or ()),
        tuple(container(c) for c in spec.init_containers or ()),
        tuple(sorted((spec.overhead or {}).items())),
    )


@dataclass(slots=True)
class NodeUsage:
    """Requested resources per node, maintained from pod changes (pure bookkeeping).

    Each pod's share is computed once, when it lands on a node, and remembered until it leaves (finishes,
    is deleted or moves): a pod's requests do not change while it is bound, so the many updates of a
    running pod (status, annotations) cost one dictionary lookup each; and pods of one shape (a task's
    replicas) share one parse.
    """

    requested: dict[str, Milli] = field(default_factory=dict)
    _held: dict[tuple[str, str], tuple[str, Milli]] = field(default_factory=dict)
    _on_node: dict[str, set[tuple[str, str]]] = field(default_factory=dict)  # node -> (namespace, pod)
    _shapes: dict[tuple[object, ...], Milli] = field(default_factory=dict)

    def apply(self, old: Pod | None, new: Pod | None) -> None:
        pod = new if new is not None else old
        if pod is None:
            return
        key = (pod.metadata.namespace or "", pod.metadata.name or "")
        node = holding_node(new) if new is not None else None
        held = self._held.get(key)
        if held is not None and held[0] == node:
            return
        if held is not None:
            del self._held[key]
            self._add(held[0], held[1], sign=-1)
            self._leave(held[0], key)
        if node is not None and new is not None:
            share = self._share(new)
            self._held[key] = (node, share)
            self._add(node, share, sign=1)
            self._on_node.setdefault(node, set()).add(key)

    def of(self, node: str) -> Resources:
        return {name: Fraction(milli, 1000) for name, milli in self.requested.get(node, {}).items()}

    def pods_on(self, node: str) -> list[tuple[str, str]]:
        """The (namespace, name) of the pods holding a share of the node, sorted."""
        return sorted(self._on_node.get(node, ()))

    def _leave(self, node: str, key: tuple[str, str]) -> None:
        keys = self._on_node.get(node)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._on_node[node]

    def _share(self, pod: Pod) -> Milli:
        shape = _shape(pod.spec)
        share = self._shapes.get(shape)
        if share is None:
            share = {name: round(value * 1000) for name, value in pod_requests(pod).items()}
            if len(self._shapes) < MAX_SHAPES:
                self._shapes[shape] = share
        return share

    def _add(self, node: str, amounts: Milli, *, sign: int) -> None:
        current = self.requested.setdefault(node, {})
        for name, value in amounts.items():
            total = current.get(name, 0) + sign * value
            if total:
                current[name] = total
            else:
                current.pop(name, None)
        if not current:
            del self.requested[node]


@dataclass(frozen=True, slots=True)
class UsageBar:
    resource: str
    requested: Fraction
    allocatable: Fraction

    @property
    def pct(self) -> float:
        return percent(self.requested, self.allocatable)

    @property
    def overcommitted(self) -> bool:
        return self.requested > self.allocatable

    @property
    def label(self) -> str:
        return f"{human(self.resource, self.requested)} / {human(self.resource, self.allocatable)}"


@dataclass(frozen=True, slots=True)
class NodeRow:
    name: str
    ready: bool
    schedulable: bool
    pods: UsageBar
    bars: list[UsageBar]


def node_row(node: Node, requested: Mapping[str, Fraction]) -> NodeRow:
    status = node.status
    allocatable = parse_amounts(status.allocatable if status else None)
    ready = any(c.type == "Ready" and c.status == "True" for c in (status.conditions if status else None) or [])
    names = ordered([*allocatable, *requested])
    zero = Fraction(0)
    return NodeRow(
        name=node.metadata.name or "",
        ready=ready,
        schedulable=not (node.spec and node.spec.unschedulable),
        pods=UsageBar(PODS, requested.get(PODS, zero), allocatable.get(PODS, zero)),
        bars=[UsageBar(n, requested.get(n, zero), allocatable.get(n, zero)) for n in names],
    )


def cluster_allocatable(nodes: Iterable[Node]) -> Resources:
    """Σ allocatable over the nodes (the width of a queue bar without a capability)."""
    return add(*(parse_amounts(n.status.allocatable if n.status else None) for n in nodes))


def cluster_totals(rows: list[NodeRow]) -> list[UsageBar]:
    """Σ over nodes per resource (the overview's one-line summary)."""
    sums: dict[str, tuple[Fraction, Fraction]] = {}
    for row in rows:
        for bar in (row.pods, *row.bars):
            requested, allocatable = sums.get(bar.resource, (Fraction(0), Fraction(0)))
            sums[bar.resource] = (requested + bar.requested, allocatable + bar.allocatable)
    return [UsageBar(n, *sums[n]) for n in ordered(sums, skip=())]
